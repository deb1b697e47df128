package core

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/storage"
)

// applyLine writes what a plan decided, in its order, while tx stays
// within storage.WriteBudget; more says that some was left for a
// transaction of its own (see placeRest). Any prefix of a plan is sound:
// each grant was weighed with those before it booked and the places of
// those still waiting kept.
func (c *Client) applyLine(tx *storage.Tx, b *admission.Books, p admission.LinePlan) (more bool, err error) {
	fits := func(writes int) bool { return tx.Written()+writes <= storage.WriteBudget }
	for _, r := range p.Leaves {
		if !fits(admission.LeaveWrites) {
			return true, nil
		}
		if err := tx.PutRequest(&r); err != nil {
			return false, err
		}
		why := r.Reason
		if r.State == domain.TimedOut {
			// The owner's own --timeout ended it: theirs, whoever placed it.
			why += c.placedBy(r.UID)
			if err := c.eventAs(tx, admission.OwnerOf(r), domain.EventLeft, 0, admission.LineDetail(r, why)); err != nil {
				return false, err
			}
			continue
		}
		if err := c.lineEvent(tx, domain.EventLeft, r, why); err != nil {
			return false, err
		}
	}
	for _, g := range p.Grants {
		if !fits(admission.GrantWrites) {
			return true, nil
		}
		g.Part.Request = g.Req.ID
		if err := tx.PutPartition(&g.Part); err != nil {
			return false, err
		}
		// The owner asked for it; the line granted it when room came.
		detail := fmt.Sprintf("%s, granted from the line (request %d, after %s in line%s)", admission.DescribeBooking(g.Part),
			g.Req.ID, human.FormatDuration(b.Now.Sub(g.Req.Created)), c.placedBy(g.Req.UID))
		if err := c.eventAs(tx, admission.OwnerOf(g.Req), domain.EventCreated, g.Part.ID, detail); err != nil {
			return false, err
		}
		g.Req.State, g.Req.Partition, g.Req.Ended = domain.Granted, g.Part.ID, b.Now
		if err := tx.PutRequest(&g.Req); err != nil {
			return false, err
		}
	}
	return false, nil
}

// PlaceLine places the waiting line, inside a transaction that may have
// freed room or changed the rules: every release, expiry, cancellation and
// policy change runs it. It grants only as many requests as the
// transaction has room for (see applyLine); more says some are left, and
// the process that commits the transaction places them with placeRest.
func (c *Client) PlaceLine(tx *storage.Tx) (more bool, err error) {
	line, err := tx.WaitingRequests()
	if err != nil || len(line) == 0 {
		return false, err
	}
	b, p, err := c.lineIn(tx, nil)
	if err != nil {
		return false, err
	}
	return c.applyLine(tx, b, p)
}

// PlaceRest places, after a transaction whose placement left some for
// want of room in it, what is left: a pass at a time, each its own
// transaction, until nothing more fits. A pass that fails (the ledger
// busy) leaves the rest for the waiters and monitors, which place what
// they find due when they next look; the change that freed the room has
// committed whatever happens here.
func (c *Client) PlaceRest(more bool) {
	for more {
		err := c.ledger.Update(c.ctx, func(tx *storage.Tx) (err error) {
			more, err = c.PlaceLine(tx)
			return err
		})
		if err != nil {
			return
		}
	}
}

// lineIn reads the books in tx and lays the waiting line out on them.
// alive, when not nil, stands in for the check of waiting processes.
func (c *Client) lineIn(tx *storage.Tx, alive func(domain.Request) bool) (*admission.Books, admission.LinePlan, error) {
	b, err := c.readLine(tx)
	if err != nil {
		return nil, admission.LinePlan{}, err
	}
	if alive != nil {
		b.Alive = alive
	}
	p, err := b.Plan(nil)
	return b, p, err
}

// readLine reads in tx all that laying the waiting line out needs, so that
// a reader can lay it out after its transaction ends (planRead): a long
// line takes a while to lay out, every waiter lays it out after each
// change, and a reader holds writers off for as long as its transaction
// lasts — with dozens of waiters, one joining the line waited out the
// ledger's timeout.
func (c *Client) readLine(tx *storage.Tx) (*admission.Books, error) {
	b, err := ledger.Books(tx, c.host, c.now())
	if err != nil {
		return nil, err
	}
	return b, b.ReadHeld()
}

// book writes a new booking and its "created" event.
func (c *Client) book(tx *storage.Tx, p *domain.Partition, owner domain.Identity, note string) error {
	if err := tx.PutPartition(p); err != nil {
		return err
	}
	detail := admission.DescribeBooking(*p)
	if owner != c.me {
		detail += " for " + owner.User
	}
	if note != "" {
		detail += " (" + note + ")"
	}
	return c.RecordEvent(tx, domain.EventCreated, *p, detail) // by whoever made it
}

// placedBy says whose process placed the line, when not the owner's: the
// one whose release, expiry or reclaim freed the room, or a monitor.
func (c *Client) placedBy(owner int) string {
	if c.me.UID == owner {
		return ""
	}
	return "; placed by " + c.me.User
}

// eventAs records an event as by who: the owner, for what their own
// request did.
func (c *Client) eventAs(tx *storage.Tx, who domain.Identity, kind domain.EventKind, booking uint64, detail string) error {
	return tx.AddEvent(domain.Event{Time: c.now(), Kind: kind, Partition: booking, UID: who.UID, User: who.User, Detail: domain.BoundDetail(detail)})
}

func (c *Client) lineEvent(tx *storage.Tx, kind domain.EventKind, r domain.Request, why string) error {
	return c.eventAs(tx, c.me, kind, 0, admission.LineDetail(r, why))
}

// Queue returns the waiting line in order, each request with its position,
// priority, ETA and why it waits.
func (c *Client) Queue() ([]admission.QueueEntry, error) {
	var b *admission.Books
	var usage []domain.BookingUsage
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) (err error) {
		if b, err = c.readLine(tx); err != nil || len(b.Line) == 0 {
			return err
		}
		usage, err = tx.UsageOf(admission.LiveIDs(b.Parts))
		return err
	})
	if err != nil {
		return nil, err
	}
	p, err := b.PlanRead()
	if err == nil {
		err = b.ReclaimETAs(&p, usage) // the ETA a coming reclaim brings forward
	}
	// Requests the next placement will book or let go are shown so.
	var out []admission.QueueEntry
	for _, g := range p.Grants {
		out = append(out, admission.QueueEntry{Request: g.Req, ETA: g.Part.Start, ETADevice: g.Part.Device, Reason: "room now: booked at the next placement"})
	}
	for _, r := range p.Leaves {
		out = append(out, admission.QueueEntry{Request: r, Reason: "leaving: " + r.Reason})
	}
	out = append(out, p.Order...)
	return out, err
}

// Enqueue makes a booking as Create does; when it cannot start now (the
// GPU full, the user at a quota, room kept for those ahead) it joins the
// waiting line instead and returns its entry. A request that could never
// be granted is refused at once.
//
// Joining a busy ledger tries again, up to joinTries times in all: the
// caller means to wait, and a crowd joining at once (hundreds of --wait
// started together on a small machine: a write each, one at a time) can
// keep the ledger busy past one lock timeout. A try that found it busy
// wrote nothing.
func (c *Client) Enqueue(req Request, o admission.WaitOptions) (*Partition, *admission.QueueEntry, error) {
	for try := 1; ; try++ {
		p, e, err := c.submit(req, &o)
		if !errors.Is(err, storage.ErrBusy) || try == admission.JoinTries {
			return p, e, err
		}
	}
}

// Cancel takes a waiting request out of the line, and gives the place it
// kept to those behind. Its owner or root may.
func (c *Client) Cancel(id uint64) error {
	var more bool
	err := c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		if _, err := c.cancel(tx, id, domain.Cancelled, "cancelled by "+c.me.User); err != nil {
			return err
		}
		var err error
		more, err = c.PlaceLine(tx)
		return err
	})
	if err == nil {
		c.PlaceRest(more)
	}
	return err
}

func (c *Client) cancel(tx *storage.Tx, id uint64, state domain.RequestState, why string) (domain.Request, error) {
	r, err := tx.Request(id)
	if errors.Is(err, storage.ErrNotFound) {
		return r, fmt.Errorf("%w: %d", domain.ErrNoRequest, id)
	}
	if err != nil {
		return r, err
	}
	if !c.me.MayChange(r.UID) {
		return r, fmt.Errorf("%w: request %d belongs to %s; only they or root may cancel it", domain.ErrNotOwner, id, r.User)
	}
	switch r.State {
	case domain.Waiting:
	case domain.Granted:
		return r, fmt.Errorf("request %d: %w as booking %d", id, admission.ErrGranted, r.Partition)
	default:
		return r, fmt.Errorf("%w: request %d is %s (%s)", domain.ErrLeftLine, id, r.State, r.Reason)
	}
	r.State, r.Reason, r.Ended = state, why, c.now()
	if err := tx.PutRequest(&r); err != nil {
		return r, err
	}
	return r, c.lineEvent(tx, domain.EventLeft, r, why)
}

// lineStatus reads, while a request waits, its place in line, whether a
// placement is due (someone can start, or must leave) that nobody has
// made yet, and how many wait in line.
func (c *Client) lineStatus(id uint64) (e admission.QueueEntry, due bool, waiting int, err error) {
	var b *admission.Books
	err = c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		r, err := tx.Request(id)
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return fmt.Errorf("%w: %d", domain.ErrNoRequest, id)
			}
			return err
		}
		if r.State != domain.Waiting {
			return nil
		}
		b, err = c.readLine(tx)
		return err
	})
	if err != nil || b == nil {
		return e, due, 0, err
	}
	p, err := b.PlanRead()
	if err != nil {
		return e, due, 0, err
	}
	due = p.Pending()
	if i := slices.IndexFunc(p.Order, func(q admission.QueueEntry) bool { return q.ID == id }); i >= 0 {
		e = p.Order[i]
	}
	return e, due, len(b.Line), nil
}

// TendLine makes the placements that time alone has made due — an ETA
// reached, a quota's window slid on, a timeout, a waiting process gone —
// and returns when the line next needs a look (zero: nobody waits).
// Monitors and waiters call it, so the line moves with no monitor running.
func (c *Client) TendLine() (time.Time, error) {
	var b *admission.Books
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		line, err := tx.WaitingRequests()
		if err != nil || len(line) == 0 {
			return err
		}
		b, err = c.readLine(tx)
		return err
	})
	if err != nil || b == nil {
		return time.Time{}, err
	}
	p, err := b.PlanRead()
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	for _, e := range p.Order {
		next = admission.Soonest(next, e.ETA)
		next = admission.Soonest(next, e.Deadline)
	}
	if !p.Pending() {
		return next, nil
	}
	if err := c.place(); err != nil {
		return next, err
	}
	return c.now(), nil // look again: what it placed may move others
}

// place places the waiting line in a transaction of its own, and what
// that leaves in more (see placeRest).
func (c *Client) place() error {
	var more bool
	err := c.ledger.Update(c.ctx, func(tx *storage.Tx) (err error) {
		more, err = c.PlaceLine(tx)
		return err
	})
	if err == nil {
		c.PlaceRest(more)
	}
	return err
}

// Wait waits for a request in line to be granted and returns its booking.
// It wakes when the ledger changes and at the request's ETA and timeout —
// no polling — and calls onChange with its entry whenever its position,
// ETA or reason changes. When ctx ends it takes the request out of the
// line (releasing a booking granted at that moment) and returns ctx's
// error.
//
// A change costs one read of the request: whoever makes a change that
// lets requests start places them in the same transaction, so a waiter
// learns of its booking from its own request. It lays the line out again,
// to learn its place and ETA, only now and then (see layoutEvery), since
// hundreds of waiters may watch one ledger and every layout reads the
// whole line: readers hold a file's writers off, and laying out a long
// line takes a while.
//
//nolint:gocyclo // one wait loop: each case is a way the wait ends (granted, cancelled, timed out, signalled, the waiter gone)
func (c *Client) Wait(ctx context.Context, id uint64, onChange func(admission.QueueEntry)) (*Partition, error) {
	c = c.Lasting() // the end of ctx takes the request out of the line
	watch, stop := context.WithCancel(ctx)
	defer stop()
	changes := c.ledger.Changes(watch, 250*time.Millisecond)
	timer := c.clock.NewTimer(time.Hour)
	defer timer.Stop()
	var last admission.QueueEntry
	var next, wake time.Time // when the line may be laid out again; when to look next
	crowd := 0               // how many waited when the line was last laid out
	acted, look := false, true
	for {
		r, err := c.Request(id)
		if err != nil && !errors.Is(err, storage.ErrBusy) {
			return nil, err
		}
		switch {
		case err != nil:
			wake = c.now().Add(time.Second) // a busy ledger: try again soon
		case r.State == domain.Granted:
			return c.Get(r.Partition)
		case r.State == domain.Cancelled || r.State == domain.TimedOut:
			return nil, fmt.Errorf("%w: request %d %s: %s", domain.ErrLeftLine, id, r.State, r.Reason)
		case look || !c.now().Before(next):
			e, due, waiting, err := c.lineStatus(id)
			if err != nil && !errors.Is(err, storage.ErrBusy) {
				return nil, err
			}
			next, look, crowd = c.now().Add(admission.LayoutEvery(waiting)), false, waiting
			if due && !acted {
				// Someone can start (perhaps this request) or must leave,
				// and no other process has placed them yet.
				acted = true
				if err := c.place(); err != nil && !errors.Is(err, storage.ErrBusy) {
					return nil, err
				}
				continue
			}
			if e.Position > 0 && (e.Position != last.Position || !e.ETA.Equal(last.ETA) || e.Reason != last.Reason) {
				last = e
				if onChange != nil {
					onChange(e)
				}
			}
			wake = admission.Soonest(e.ETA, r.Deadline)
			if wake.IsZero() {
				wake = c.now().Add(time.Hour)
			}
		default:
			// Changed since the line was laid out: lay it out again when
			// its time comes, unless the ETA comes first.
			wake = admission.Soonest(wake, next)
		}
		timer.Reset(max(clock.Until(c.clock, wake), 0))
		select {
		case <-ctx.Done():
			return nil, c.leave(id, proc.WhyStopped(ctx))
		case <-changes:
			acted = false
			// A change wakes every waiter at once. In a long line each
			// reads after a random part of settleFor(crowd), with the
			// changes that come meanwhile, rather than all together after
			// each: a file's readers hold its writers off.
			select {
			case <-ctx.Done():
				return nil, c.leave(id, proc.WhyStopped(ctx))
			case <-clock.Kernel.After(rand.N(admission.SettleFor(crowd))): // pacing reads, not a time of the books
			}
			select {
			case <-changes:
			default:
			}
		case <-timer.C():
			acted, look = false, true
		}
	}
}

// BookOrWait books req as Create does; with wait set, a request that
// cannot start now joins the line (see Enqueue) and waits there until it
// is booked (see Wait). joined hears its entry once, when it joins;
// onChange hears its place in line as it changes (see Wait); either may be
// nil. The end of ctx takes it out of the line; to leave on a signal
// (Ctrl-C, a hang-up), end ctx on it before calling (see Interruptible),
// so that one that comes as the request joins is not lost.
func (c *Client) BookOrWait(ctx context.Context, req Request, wait *admission.WaitOptions, joined, onChange func(admission.QueueEntry)) (*Partition, error) {
	if wait == nil {
		return c.Create(req)
	}
	p, entry, err := c.Enqueue(req, *wait)
	if err != nil || p != nil {
		return p, err
	}
	if joined != nil {
		joined(*entry)
	}
	return c.Wait(ctx, entry.ID, onChange)
}

// Request reads one request.
func (c *Client) Request(id uint64) (domain.Request, error) {
	var r domain.Request
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		var err error
		if r, err = tx.Request(id); errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("%w: %d", domain.ErrNoRequest, id)
		}
		return err
	})
	return r, err
}

// leave takes this waiter's request out of the line; a booking granted
// just now is released, since nobody waits for it any more.
func (c *Client) leave(id uint64, why error) error {
	var granted uint64
	var more bool
	err := c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		granted, more = 0, false
		r, err := c.cancel(tx, id, domain.Cancelled, "its waiter stopped waiting")
		switch {
		case errors.Is(err, admission.ErrGranted):
			granted = r.Partition
			return nil
		case errors.Is(err, domain.ErrLeftLine):
			return nil
		case err != nil:
			return err
		}
		more, err = c.PlaceLine(tx)
		return err
	})
	if err == nil {
		c.PlaceRest(more)
	}
	if err == nil && granted != 0 {
		_, err = c.Release(granted)
	}
	stopped := fmt.Errorf("stopped waiting (%w)", why)
	if errors.As(why, new(*proc.Interrupted)) {
		stopped = why
	}
	if err != nil {
		return fmt.Errorf("%w: request %d: %w, and leaving the line failed: %w", domain.ErrLeftLine, id, stopped, err)
	}
	return fmt.Errorf("%w: request %d: %w", domain.ErrLeftLine, id, stopped)
}
