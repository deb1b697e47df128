package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
)

// AnyDevice asks for whichever GPU of a host has room first.
const AnyDevice = storage.AnyDevice

// books is what admission and the waiting line read in one transaction:
// every host's, since quotas and fair share are the lab's.
type books struct {
	// heldSince reads the intervals a user's ended bookings held since an
	// instant, while the transaction lasts (nil once it has ended).
	heldSince func(uid int, since time.Time) ([]storage.Held, error)
	now   time.Time
	here  string                       // this host's name in the ledger ("" in a file)
	invs  map[string]storage.Inventory // every host's GPUs, by host
	gpus  int                          // how many GPUs all hosts have: the capacity fair share is measured against
	pol   Policy
	parts []storage.Partition // stored live: started, ahead, or past their deadline and not yet flipped
	line  []storage.Request   // waiting, oldest first
	usage []storage.UserUsage // read when someone waits: it orders the line
	// limits caches each user's limits for this transaction; heldBy, the
	// held intervals of users with an hours quota, read by readHeld.
	limits map[int]Limits
	heldBy map[int]calendar
	// alive says whether a request's waiting process still runs.
	alive func(storage.Request) bool
	// onBehalf is the user root books for (create --user, extending their
	// booking): quota refusals name them. "": the caller's own.
	onBehalf string
}

func readBooks(tx *storage.Tx, here string, now time.Time) (*books, error) {
	b := &books{heldSince: tx.HeldSince, now: now, here: here, limits: map[int]Limits{}, heldBy: map[int]calendar{}, alive: waiterAlive}
	var err error
	if b.invs, err = inventories(tx, here); err != nil {
		return nil, err
	}
	for _, inv := range b.invs {
		b.gpus += len(inv.Devices)
	}
	if b.pol, err = policyIn(tx); err != nil {
		return nil, err
	}
	if b.parts, err = tx.LivePartitions(); err != nil {
		return nil, err
	}
	if b.line, err = tx.WaitingRequests(); err != nil {
		return nil, err
	}
	if len(b.line) > 0 {
		b.usage, err = tx.UserUsages()
	}
	return b, err
}

// inventories is every host's GPUs, by host: a ledger many hosts share
// keeps each host's inventory; a file keeps its own host's, under "".
func inventories(tx *storage.Tx, here string) (map[string]storage.Inventory, error) {
	invs, err := tx.HostInventories()
	if err != nil {
		return nil, err
	}
	inv, ok, err := tx.HostInventory(here)
	if ok {
		invs[here] = inv
	}
	return invs, err
}

// gpuName names g as people on this host type it: gpu3:0, or 0 for this
// host's.
func (b *books) gpuName(g gpuID) string { return gpuName(b.here, g.host, g.device) }

// held is, for the users given who have an hours quota (their limits
// looked up already), what their ended bookings held within its window.
func (b *books) held(uids ...int) (calendar, error) {
	var cal calendar
	done := map[int]bool{}
	for _, uid := range uids {
		if done[uid] {
			continue
		}
		done[uid] = true
		if l := b.limits[uid]; l.UserHours != nil && !l.Exempt {
			held, ok := b.heldBy[uid]
			if !ok {
				if b.heldSince == nil {
					return nil, fmt.Errorf("core: the held intervals of uid %d were not read in the transaction", uid)
				}
				rows, err := b.heldSince(uid, b.now.Add(-l.HoursWindow))
				if err != nil {
					return nil, err
				}
				held = heldSlots(rows, uid)
				b.heldBy[uid] = held
			}
			cal = append(cal, held...)
		}
	}
	return cal, nil
}

// readHeld reads, while the transaction lasts, the held intervals that
// laying out the line will weigh: those of everyone waiting.
func (b *books) readHeld() error {
	uids := make([]int, 0, len(b.line))
	for _, r := range b.line {
		b.limitsFor(r.UID, r.User)
		uids = append(uids, r.UID)
	}
	_, err := b.held(uids...)
	return err
}

func (b *books) limitsFor(uid int, name string) Limits {
	l, ok := b.limits[uid]
	if !ok {
		l = LimitsFor(b.pol, Identity{UID: uid, User: name})
		b.limits[uid] = l
	}
	return l
}

// devicesFor resolves a request's GPU on its host: the one named, or
// every GPU of the host for any. It is the one place a device is looked
// up for booking.
func (b *books) devicesFor(host string, index int) ([]storage.Device, error) {
	inv, ok := b.invs[host]
	if !ok {
		return nil, fmt.Errorf("%w: no GPUs of host %s are known: chronos has not run there yet", ErrNoDevice, host)
	}
	if index == AnyDevice && len(inv.Devices) > 0 {
		return inv.Devices, nil
	}
	d, err := findDevice(inv, index)
	if err != nil && host != b.here {
		err = fmt.Errorf("on host %s: %w", host, err)
	}
	if err != nil {
		return nil, err
	}
	return []storage.Device{d}, nil
}

// askOn is r weighed on device d of its host.
func (b *books) askOn(r storage.Request, d storage.Device) (ask, error) {
	share := r.SharePPM
	if r.Bytes > 0 {
		var err error
		if share, _, err = shareOf(Bytes(r.Bytes), d); err != nil {
			return ask{}, err
		}
	}
	return ask{gpu: gpuID{host: r.Host, device: d.Index}, uid: r.UID, share: share, length: r.Duration, limits: b.limitsFor(r.UID, r.User)}, nil
}

// fit is where and when a request can start: on dev of ask.gpu's host.
type fit struct {
	dev   storage.Device
	ask   ask
	start time.Time
}

// possible says why r could never be granted, whatever the calendar held:
// no such GPU, more than a GPU has, longer than allowed, more than a quota
// allows by itself. Nil: it can, some time.
func (b *books) possible(r storage.Request) error {
	devs, err := b.devicesFor(r.Host, r.Device)
	if err != nil {
		return err
	}
	if err := checkLength(b.limitsFor(r.UID, r.User), r.Duration, b.now, b.now); err != nil {
		return err
	}
	var first error
	for _, d := range devs {
		a, err := b.askOn(r, d)
		if err == nil {
			if blk := a.never(); blk == nil {
				return nil
			} else {
				err = b.neverRefusal(blk, a)
			}
		}
		first = cmp.Or(first, err)
	}
	return first
}

// earliest is where and when r can first start at or after from, and what
// stops it at from (nil: it starts at from). Among GPUs that fit as soon,
// the first listed wins; what stops it is a quota when a quota stops it
// on one of them: a full GPU 0 is not why "any" waits when GPU 1 has room
// the user's quota keeps them from.
func (b *books) earliest(lay *layout, r storage.Request, from time.Time) (fit, *blocker) {
	devs, _ := b.devicesFor(r.Host, r.Device)
	var best fit
	var why *blocker
	for _, d := range devs {
		a, err := b.askOn(r, d)
		if err != nil || a.never() != nil {
			continue
		}
		t, blk := lay.earliest(a, from)
		switch {
		case t.IsZero():
		case best.start.IsZero() || t.Before(best.start):
			best, why = fit{dev: d, ask: a, start: t}, blk
		case t.Equal(best.start) && blk.quota() && !why.quota():
			why = blk
		}
	}
	return best, why
}

// booking is the booking r gets at f.
func (b *books) booking(r storage.Request, f fit) storage.Partition {
	bytes := r.Bytes
	if bytes == 0 {
		bytes = bytesOf(f.ask.share, f.dev.MemoryTotal)
	}
	return storage.Partition{Host: f.ask.gpu.host, Device: f.dev.Index, DeviceUUID: f.dev.UUID, SharePPM: f.ask.share, Bytes: bytes,
		ComputePct: r.ComputePct, UID: r.UID, User: r.User, Created: b.now, Start: f.start,
		Expires: f.start.Add(r.Duration), State: storage.Live}
}

// QueueEntry is one request in the waiting line as it stands now.
type QueueEntry struct {
	storage.Request
	Position int     `json:"position"` // 1 is next
	Factor   float64 `json:"fair_share"`
	Priority float64 `json:"priority"`
	// ETA is when it should start, given the bookings and the requests
	// ahead of it; ETADevice the GPU of its host it would start on.
	ETA       time.Time `json:"eta"`
	ETADevice int       `json:"eta_device"`
	Reason    string    `json:"reason"` // why it cannot start now
}

type grant struct {
	req  storage.Request
	part storage.Partition
}

// linePlan is what one pass over the line decides.
type linePlan struct {
	order  []QueueEntry      // still waiting, in order
	grants []grant           // start now (or at their --at)
	leaves []storage.Request // leave unbooked, with why
	// cal is the calendar with every grant and the places kept for the
	// requests still waiting, and what the ended bookings of heldOf's
	// users held (for their hours quotas).
	cal    calendar
	heldOf map[int]bool
	// The request being made, when there is one: booked, or its entry and
	// what stops it now.
	candPart *storage.Partition
	cand     *QueueEntry
	candFit  fit
	candBlk  *blocker
}

func (p linePlan) pending() bool { return len(p.grants)+len(p.leaves) > 0 }

// keptForCandidate marks the place kept for a request not yet stored.
const keptForCandidate = math.MaxUint64

// plan orders the line and places it on the calendar: requests whose time
// ran out or whose process is gone leave; the rest go in priority order,
// each starting now if it fits beside the bookings and the places kept for
// those ahead, else keeping its own place at its ETA (conservative
// backfill: nobody behind can delay it). cand is a request being made now,
// weighed like the others; an error says it could never be granted.
func (b *books) plan(cand *storage.Request) (linePlan, error) {
	var p linePlan
	var entries []QueueEntry
	for _, r := range b.line {
		if state, why := b.leaving(r); why != "" {
			r.State, r.Reason, r.Ended = state, why, b.now
			p.leaves = append(p.leaves, r)
			continue
		}
		entries = append(entries, QueueEntry{Request: r})
	}
	if cand != nil {
		if err := b.possible(*cand); err != nil {
			return p, err
		}
		entries = append(entries, QueueEntry{Request: *cand})
	}
	if len(b.line) > 0 {
		b.prioritise(entries)
	}
	p.cal = calendarOf(b.parts)
	p.heldOf = map[int]bool{}
	for _, e := range entries {
		b.limitsFor(e.UID, e.User)
		p.heldOf[e.UID] = true
	}
	held, err := b.held(slices.Collect(maps.Keys(p.heldOf))...)
	if err != nil {
		return p, err
	}
	lay := newLayout(append(p.cal, held...))
	for _, e := range entries {
		from := later(b.now, e.NotBefore)
		f, blk := b.earliest(lay, e.Request, from)
		isCand := cand != nil && e.ID == 0
		if f.start.IsZero() {
			continue // possible() said it can; keep no place rather than a wrong one
		}
		if blk == nil {
			part := b.booking(e.Request, f)
			lay.add(slotOf(part))
			if isCand {
				p.candPart = &part
			} else {
				p.grants = append(p.grants, grant{req: e.Request, part: part})
			}
			continue
		}
		e.Position, e.ETA, e.ETADevice, e.Reason = len(p.order)+1, f.start, f.dev.Index, b.reason(blk, f.ask)
		keep := e.ID
		if isCand {
			keep = keptForCandidate
		}
		lay.add(f.ask.slot(f.start, keep))
		p.order = append(p.order, e)
		if isCand {
			p.cand, p.candFit, p.candBlk = &e, f, blk
		}
	}
	p.cal = lay.cal
	return p, nil
}

// leaving says why a waiting request leaves the line unbooked, if it does.
func (b *books) leaving(r storage.Request) (storage.RequestState, string) {
	switch {
	case !r.Deadline.IsZero() && !b.now.Before(r.Deadline):
		return storage.TimedOut, fmt.Sprintf("waited %s (--timeout)", FormatDuration(r.Deadline.Sub(r.Created)))
	case !b.alive(r):
		return storage.Cancelled, fmt.Sprintf("its waiting process (pid %d on %s) is gone", r.Waiter.PID, r.Waiter.Host)
	}
	if err := b.possible(r); err != nil {
		return storage.Cancelled, "it can never be granted: " + err.Error()
	}
	return "", ""
}

// prioritise computes each entry's fair-share factor and priority, and
// sorts them: highest priority first, then the oldest.
func (b *books) prioritise(entries []QueueEntry) {
	used := usageAt(b.usage, b.parts, b.now, b.pol.HalfLife)
	for i := range entries {
		e := &entries[i]
		e.Factor = fairShare(used[e.UID], b.gpus, b.pol.HalfLife, b.limitsFor(e.UID, e.User).Share)
		e.Priority = priority(e.Factor, b.now.Sub(e.Created), b.pol)
	}
	slices.SortStableFunc(entries, func(x, y QueueEntry) int {
		return cmp.Or(cmp.Compare(y.Priority, x.Priority), x.Created.Compare(y.Created), cmp.Compare(x.ID, y.ID))
	})
}

// waiterAlive says whether a request's waiting process may still run.
// Only a process of this machine is looked up (see fateOfProcess): one of
// another host is left waiting, for that host's monitor and waiters to
// look after. Only root looks up another user's (see keepsRecordsOf):
// hidden from this process, it would look gone.
func waiterAlive(r storage.Request) bool {
	if r.Waiter.PID <= 0 || !keepsRecordsOf(RealRoot(), r.UID) {
		return true
	}
	f := fateOfProcess(r.Waiter)
	return f != processGone && f != processRebooted
}

// What one request's leaving the line, or its grant, writes: the request
// and its waiting index entry, and its event ("left"); or those and its
// booking with the booking's live index entry (the event is "created").
const (
	leaveWrites = 3
	grantWrites = 5
)

// applyLine writes what a plan decided, in its order, while tx stays
// within storage.WriteBudget; more says that some was left for a
// transaction of its own (see placeRest). Any prefix of a plan is sound:
// each grant was weighed with those before it booked and the places of
// those still waiting kept.
func (c *Client) applyLine(tx *storage.Tx, b *books, p linePlan) (more bool, err error) {
	fits := func(writes int) bool { return tx.Written()+writes <= storage.WriteBudget }
	for _, r := range p.leaves {
		if !fits(leaveWrites) {
			return true, nil
		}
		if err := tx.PutRequest(&r); err != nil {
			return false, err
		}
		why := r.Reason
		if r.State == storage.TimedOut {
			// The owner's own --timeout ended it: theirs, whoever placed it.
			why += c.placedBy(r.UID)
			if err := c.eventAs(tx, ownerOf(r), storage.EventLeft, 0, lineDetail(r, why)); err != nil {
				return false, err
			}
			continue
		}
		if err := c.lineEvent(tx, storage.EventLeft, r, why); err != nil {
			return false, err
		}
	}
	for _, g := range p.grants {
		if !fits(grantWrites) {
			return true, nil
		}
		g.part.Request = g.req.ID
		if err := tx.PutPartition(&g.part); err != nil {
			return false, err
		}
		// The owner asked for it; the line granted it when room came.
		detail := fmt.Sprintf("%s, granted from the line (request %d, after %s in line%s)", describeBooking(g.part),
			g.req.ID, FormatDuration(b.now.Sub(g.req.Created)), c.placedBy(g.req.UID))
		if err := c.eventAs(tx, ownerOf(g.req), storage.EventCreated, g.part.ID, detail); err != nil {
			return false, err
		}
		g.req.State, g.req.Partition, g.req.Ended = storage.Granted, g.part.ID, b.now
		if err := tx.PutRequest(&g.req); err != nil {
			return false, err
		}
	}
	return false, nil
}

// placeLine places the waiting line, inside a transaction that may have
// freed room or changed the rules: every release, expiry, cancellation and
// policy change runs it. It grants only as many requests as the
// transaction has room for (see applyLine); more says some are left, and
// the process that commits the transaction places them with placeRest.
func (c *Client) placeLine(tx *storage.Tx) (more bool, err error) {
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

// placeRest places, after a transaction whose placement left some for
// want of room in it, what is left: a pass at a time, each its own
// transaction, until nothing more fits. A pass that fails (the ledger
// busy) leaves the rest for the waiters and monitors, which place what
// they find due when they next look; the change that freed the room has
// committed whatever happens here.
func (c *Client) placeRest(more bool) {
	for more {
		err := c.ledger.Update(c.ctx, func(tx *storage.Tx) (err error) {
			more, err = c.placeLine(tx)
			return err
		})
		if err != nil {
			return
		}
	}
}

// lineIn reads the books in tx and lays the waiting line out on them.
// alive, when not nil, stands in for the check of waiting processes.
func (c *Client) lineIn(tx *storage.Tx, alive func(storage.Request) bool) (*books, linePlan, error) {
	b, err := c.readLine(tx)
	if err != nil {
		return nil, linePlan{}, err
	}
	if alive != nil {
		b.alive = alive
	}
	p, err := b.plan(nil)
	return b, p, err
}

// readLine reads in tx all that laying the waiting line out needs, so that
// a reader can lay it out after its transaction ends (planRead): a long
// line takes a while to lay out, every waiter lays it out after each
// change, and a reader holds writers off for as long as its transaction
// lasts — with dozens of waiters, one joining the line waited out the
// ledger's timeout.
func (c *Client) readLine(tx *storage.Tx) (*books, error) {
	b, err := readBooks(tx, c.host, c.now())
	if err != nil {
		return nil, err
	}
	return b, b.readHeld()
}

// planRead lays the line out on books that readLine read in a transaction
// that has ended: the same plan lineIn makes, from the same snapshot.
func (b *books) planRead() (linePlan, error) {
	b.heldSince = nil
	return b.plan(nil)
}

// book writes a new booking and its "created" event.
func (c *Client) book(tx *storage.Tx, p *storage.Partition, owner Identity, note string) error {
	if err := tx.PutPartition(p); err != nil {
		return err
	}
	detail := describeBooking(*p)
	if owner != c.me {
		detail += " for " + owner.User
	}
	if note != "" {
		detail += " (" + note + ")"
	}
	return c.event(tx, storage.EventCreated, *p, detail) // by whoever made it
}

// describeBooking is what a "created" event says of a booking.
func describeBooking(p storage.Partition) string {
	s := fmt.Sprintf("%s (%s) of GPU %s for %s", FormatPercent(p.SharePPM), FormatBytes(p.Bytes), FormatGPU(p.Host, p.Device), FormatDuration(p.Expires.Sub(p.Start)))
	if p.Start.After(p.Created) {
		s += ", from " + p.Start.UTC().Format(time.RFC3339)
	}
	return s
}

// placedBy says whose process placed the line, when not the owner's: the
// one whose release, expiry or reclaim freed the room, or a monitor.
func (c *Client) placedBy(owner int) string {
	if c.me.UID == owner {
		return ""
	}
	return "; placed by " + c.me.User
}

func ownerOf(r storage.Request) Identity { return Identity{UID: r.UID, User: r.User} }

// eventAs records an event as by who: the owner, for what their own
// request did.
func (c *Client) eventAs(tx *storage.Tx, who Identity, kind storage.EventKind, booking uint64, detail string) error {
	return tx.AddEvent(storage.Event{Time: c.now(), Kind: kind, Partition: booking, UID: who.UID, User: who.User, Detail: boundDetail(detail)})
}

func lineDetail(r storage.Request, why string) string {
	return fmt.Sprintf("request %d (%s): %s", r.ID, DescribeRequest(r), why)
}

func (c *Client) lineEvent(tx *storage.Tx, kind storage.EventKind, r storage.Request, why string) error {
	return c.eventAs(tx, c.me, kind, 0, lineDetail(r, why))
}

// DescribeRequest says what a request asks: "50% of GPU 0 for 2h", "50%
// of any GPU of gpu3 for 2h".
func DescribeRequest(r storage.Request) string {
	what := FormatPercent(r.SharePPM)
	if r.Bytes > 0 {
		what = FormatBytes(r.Bytes)
	}
	gpuName := "GPU " + FormatGPU(r.Host, r.Device)
	switch {
	case r.Device != AnyDevice:
	case r.Host == "":
		gpuName = "any GPU"
	default:
		gpuName = "any GPU of " + r.Host
	}
	s := fmt.Sprintf("%s of %s for %s", what, gpuName, FormatDuration(r.Duration))
	if !r.NotBefore.IsZero() {
		s += ", from " + r.NotBefore.UTC().Format(time.RFC3339)
	}
	if r.User != "" {
		s += ", " + r.User
	}
	return s
}

// Queue returns the waiting line in order, each request with its position,
// priority, ETA and why it waits.
func (c *Client) Queue() ([]QueueEntry, error) {
	var b *books
	var usage []storage.BookingUsage
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) (err error) {
		if b, err = c.readLine(tx); err != nil || len(b.line) == 0 {
			return err
		}
		usage, err = tx.UsageOf(liveIDs(b.parts))
		return err
	})
	if err != nil {
		return nil, err
	}
	p, err := b.planRead()
	if err == nil {
		err = b.reclaimETAs(&p, usage) // the ETA a coming reclaim brings forward
	}
	// Requests the next placement will book or let go are shown so.
	var out []QueueEntry
	for _, g := range p.grants {
		out = append(out, QueueEntry{Request: g.req, ETA: g.part.Start, ETADevice: g.part.Device, Reason: "room now: booked at the next placement"})
	}
	for _, r := range p.leaves {
		out = append(out, QueueEntry{Request: r, Reason: "leaving: " + r.Reason})
	}
	out = append(out, p.order...)
	return out, err
}

// WaitOptions say how a request waits in line.
type WaitOptions struct {
	// Timeout is how long it waits before it leaves the line (0: for ever).
	Timeout time.Duration
	// PID is the waiting process (0: this one); when it is gone, the
	// request leaves the line.
	PID int
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
func (c *Client) Enqueue(req Request, o WaitOptions) (*Partition, *QueueEntry, error) {
	for try := 1; ; try++ {
		p, e, err := c.submit(req, &o)
		if !errors.Is(err, storage.ErrBusy) || try == joinTries {
			return p, e, err
		}
	}
}

const joinTries = 3

// Cancel takes a waiting request out of the line, and gives the place it
// kept to those behind. Its owner or root may.
func (c *Client) Cancel(id uint64) error {
	var more bool
	err := c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		if _, err := c.cancel(tx, id, storage.Cancelled, "cancelled by "+c.me.User); err != nil {
			return err
		}
		var err error
		more, err = c.placeLine(tx)
		return err
	})
	if err == nil {
		c.placeRest(more)
	}
	return err
}

// errGranted says the request left the line with a booking.
var errGranted = errors.New("already granted")

func (c *Client) cancel(tx *storage.Tx, id uint64, state storage.RequestState, why string) (storage.Request, error) {
	r, err := tx.Request(id)
	if errors.Is(err, storage.ErrNotFound) {
		return r, fmt.Errorf("%w: %d", ErrNoRequest, id)
	}
	if err != nil {
		return r, err
	}
	if !c.me.MayChange(r.UID) {
		return r, fmt.Errorf("%w: request %d belongs to %s; only they or root may cancel it", ErrNotOwner, id, r.User)
	}
	switch r.State {
	case storage.Waiting:
	case storage.Granted:
		return r, fmt.Errorf("request %d: %w as booking %d", id, errGranted, r.Partition)
	default:
		return r, fmt.Errorf("%w: request %d is %s (%s)", ErrLeftLine, id, r.State, r.Reason)
	}
	r.State, r.Reason, r.Ended = state, why, c.now()
	if err := tx.PutRequest(&r); err != nil {
		return r, err
	}
	return r, c.lineEvent(tx, storage.EventLeft, r, why)
}

// lineStatus reads, while a request waits, its place in line, whether a
// placement is due (someone can start, or must leave) that nobody has
// made yet, and how many wait in line.
func (c *Client) lineStatus(id uint64) (e QueueEntry, due bool, waiting int, err error) {
	var b *books
	err = c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		r, err := tx.Request(id)
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return fmt.Errorf("%w: %d", ErrNoRequest, id)
			}
			return err
		}
		if r.State != storage.Waiting {
			return nil
		}
		b, err = c.readLine(tx)
		return err
	})
	if err != nil || b == nil {
		return e, due, 0, err
	}
	p, err := b.planRead()
	if err != nil {
		return e, due, 0, err
	}
	due = p.pending()
	if i := slices.IndexFunc(p.order, func(q QueueEntry) bool { return q.ID == id }); i >= 0 {
		e = p.order[i]
	}
	return e, due, len(b.line), nil
}

// TendLine makes the placements that time alone has made due — an ETA
// reached, a quota's window slid on, a timeout, a waiting process gone —
// and returns when the line next needs a look (zero: nobody waits).
// Monitors and waiters call it, so the line moves with no monitor running.
func (c *Client) TendLine() (time.Time, error) {
	var b *books
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
	p, err := b.planRead()
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	for _, e := range p.order {
		next = soonest(next, e.ETA)
		next = soonest(next, e.Deadline)
	}
	if !p.pending() {
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
		more, err = c.placeLine(tx)
		return err
	})
	if err == nil {
		c.placeRest(more)
	}
	return err
}

// soonest is the earlier of two instants, a zero one not counting.
func soonest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
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
func (c *Client) Wait(ctx context.Context, id uint64, onChange func(QueueEntry)) (*Partition, error) {
	c = c.lasting() // the end of ctx takes the request out of the line
	watch, stop := context.WithCancel(ctx)
	defer stop()
	changes := c.ledger.Changes(watch, 250*time.Millisecond)
	timer := c.clock.NewTimer(time.Hour)
	defer timer.Stop()
	var last QueueEntry
	var next, wake time.Time // when the line may be laid out again; when to look next
	crowd := 0               // how many waited when the line was last laid out
	acted, look := false, true
	for {
		r, err := c.request(id)
		if err != nil && !errors.Is(err, storage.ErrBusy) {
			return nil, err
		}
		switch {
		case err != nil:
			wake = c.now().Add(time.Second) // a busy ledger: try again soon
		case r.State == storage.Granted:
			return c.Get(r.Partition)
		case r.State == storage.Cancelled || r.State == storage.TimedOut:
			return nil, fmt.Errorf("%w: request %d %s: %s", ErrLeftLine, id, r.State, r.Reason)
		case look || !c.now().Before(next):
			e, due, waiting, err := c.lineStatus(id)
			if err != nil && !errors.Is(err, storage.ErrBusy) {
				return nil, err
			}
			next, look, crowd = c.now().Add(layoutEvery(waiting)), false, waiting
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
			wake = soonest(e.ETA, r.Deadline)
			if wake.IsZero() {
				wake = c.now().Add(time.Hour)
			}
		default:
			// Changed since the line was laid out: lay it out again when
			// its time comes, unless the ETA comes first.
			wake = soonest(wake, next)
		}
		timer.Reset(max(clock.Until(c.clock, wake), 0))
		select {
		case <-ctx.Done():
			return nil, c.leave(id, whyStopped(ctx))
		case <-changes:
			acted = false
			// A change wakes every waiter at once. In a long line each
			// reads after a random part of settleFor(crowd), with the
			// changes that come meanwhile, rather than all together after
			// each: a file's readers hold its writers off.
			select {
			case <-ctx.Done():
				return nil, c.leave(id, whyStopped(ctx))
			case <-clock.Kernel.After(rand.N(settleFor(crowd))): // pacing reads, not a time of the books
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
func (c *Client) BookOrWait(ctx context.Context, req Request, wait *WaitOptions, joined, onChange func(QueueEntry)) (*Partition, error) {
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

// layoutEvery is how long a waiter leaves between laying out a line of n
// after the ledger changed: a second, and for a long line longer, so that
// all its waiters together lay it out about twenty times a second at most
// (a line of 200 takes some 5 ms to read and lay out, much more on a
// loaded machine); plus as much again at random, so that the waiters a
// change woke together do not read together.
func layoutEvery(n int) time.Duration {
	d := max(time.Second, time.Duration(n)*50*time.Millisecond)
	return d + rand.N(d)
}

// settleFor is how long, at most, a waiter in a line of n lets a change
// settle before it reads its request: 10 ms a waiter, up to 2 s — so that
// a line's waiters read about two hundred times a second at most after a
// burst of changes (a file's readers hold its writers off), and each
// learns of its booking within a second in a line of up to a hundred,
// within two in a longer one.
func settleFor(n int) time.Duration {
	return min(time.Duration(max(n, 1))*10*time.Millisecond, 2*time.Second)
}

// request reads one request.
func (c *Client) request(id uint64) (storage.Request, error) {
	var r storage.Request
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		var err error
		if r, err = tx.Request(id); errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("%w: %d", ErrNoRequest, id)
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
		r, err := c.cancel(tx, id, storage.Cancelled, "its waiter stopped waiting")
		switch {
		case errors.Is(err, errGranted):
			granted = r.Partition
			return nil
		case errors.Is(err, ErrLeftLine):
			return nil
		case err != nil:
			return err
		}
		more, err = c.placeLine(tx)
		return err
	})
	if err == nil {
		c.placeRest(more)
	}
	if err == nil && granted != 0 {
		_, err = c.Release(granted)
	}
	stopped := fmt.Errorf("stopped waiting (%w)", why)
	if errors.As(why, new(*Interrupted)) {
		stopped = why
	}
	if err != nil {
		return fmt.Errorf("%w: request %d: %w, and leaving the line failed: %w", ErrLeftLine, id, stopped, err)
	}
	return fmt.Errorf("%w: request %d: %w", ErrLeftLine, id, stopped)
}
