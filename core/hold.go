package core

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/storage"
)

// ErrNoReason means a hold was asked for without saying why.
var ErrNoReason = fmt.Errorf("%w: a hold needs a reason", domain.ErrInput)

// ReclaimHelps reports whether ending p now would let a request waiting
// in line start: the line laid out with p ended grants more than without.
// A waiter that its own quota (or anything but p's share) keeps out gains
// nothing from the room, and the GPU would sit empty.
func (c *Client) ReclaimHelps(tx *storage.Tx, p domain.Partition, now time.Time) (bool, error) {
	if waiting, err := someoneWaits(tx, p, now); err != nil || !waiting {
		return false, err
	}
	b, err := ledger.Books(tx, c.host, now)
	if err != nil {
		return false, err
	}
	if err := b.ReadHeld(); err != nil {
		return false, err
	}
	without, err := b.Plan(nil)
	if err != nil {
		return false, err
	}
	for i := range b.Parts {
		if b.Parts[i].ID == p.ID {
			b.Parts[i].Expires = now
		}
	}
	with, err := b.Plan(nil)
	return len(with.Grants) > len(without.Grants), err
}

// someoneWaits reports whether a request in the waiting line wants one
// of p's GPUs (or any GPU of its host).
func someoneWaits(tx *storage.Tx, p domain.Partition, now time.Time) (bool, error) {
	line, err := tx.WaitingRequests()
	return slices.ContainsFunc(line, func(r domain.Request) bool {
		return r.Host == p.Host && slices.ContainsFunc(p.GPUs(), r.Wants) && stillWaits(r, now)
	}), err
}

// stillWaits is whether r, in the line, still waits at now: one past its
// --timeout leaves at the next placement, and wants nothing meanwhile.
func stillWaits(r domain.Request, now time.Time) bool {
	return r.Deadline.IsZero() || now.Before(r.Deadline)
}

// WaitingIn counts the requests waiting in line for this host's GPUs at
// now, by GPU index (a request for several counts on each it names);
// AnyDevice counts those for any of its GPUs. Requests past their
// --timeout are left out, as the idle ladder leaves them out.
func (c *Client) WaitingIn(tx *storage.Tx, now time.Time) (map[int]int, error) {
	n := map[int]int{}
	line, err := tx.WaitingRequests()
	for _, r := range line {
		if r.Host != c.host || !stillWaits(r, now) {
			continue
		}
		if len(r.Devices) == 0 {
			n[r.Device]++
		}
		for _, d := range r.Devices {
			n[d]++
		}
	}
	return n, err
}

// Hold exempts a live booking from idle reclaim for d (at most the
// policy's hold-max), saying why. Its owner or root may; the hold goes in
// the audit trail and the booking's usage, and the ladder starts over when
// it ends. The holds of one idle stretch (until the booking works again)
// last hold-max in all, unless root holds it: holding again and again does
// not keep an idle booking from the line.
func (c *Client) Hold(id uint64, d time.Duration, reason string) (domain.BookingUsage, error) {
	reason = strings.TrimSpace(reason)
	var u domain.BookingUsage
	err := c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		p, err := c.Mine(tx, id, "hold")
		if err != nil {
			return err // whose it is comes before what was asked
		}
		if err := checkHold(d, reason); err != nil {
			return err
		}
		pol, err := ledger.Policy(tx)
		if err != nil {
			return err
		}
		if d > pol.HoldMax {
			return fmt.Errorf("%w: a hold of %s asked, the most is %s (policy hold-max)", domain.ErrTooLong, human.FormatDuration(d), human.FormatDuration(pol.HoldMax))
		}
		if u, _, err = tx.BookingUsage(id); err != nil {
			return err
		}
		now := c.now()
		since := u.HoldSince
		if since.IsZero() || u.LastActive.After(since) {
			since = now // a new idle stretch
		}
		if end := since.Add(pol.HoldMax); !c.me.Root() && now.Add(d).After(end) {
			if !end.After(now) {
				return fmt.Errorf("%w: held for %s (hold-max) already while it sat idle; it can be held again once it has worked", domain.ErrTooLong, human.FormatDuration(pol.HoldMax))
			}
			return fmt.Errorf("%w: a hold of %s asked, but this idle stretch's holds may last %s in all (hold-max): at most %s more, until %s",
				domain.ErrTooLong, human.FormatDuration(d), human.FormatDuration(pol.HoldMax), human.FormatDuration(end.Sub(now).Truncate(time.Second)), human.FormatTime(end, now))
		}
		u.HeldUntil, u.HoldReason, u.Holds, u.HoldSince = now.Add(d), reason, u.Holds+1, since
		u.Warnings, u.WarnedAt = 0, time.Time{}
		if err := tx.PutBookingUsage(u); err != nil {
			return err
		}
		return c.RecordEvent(tx, domain.EventHeld, p, fmt.Sprintf("for %s, until %s: %s", human.FormatDuration(d), u.HeldUntil.UTC().Format(time.RFC3339), reason))
	})
	return u, err
}

// checkHold checks what a hold asks: a reason in plain words, of a
// sensible length, and a length of a second or more.
func checkHold(d time.Duration, reason string) error {
	switch {
	case reason == "":
		return fmt.Errorf("%w (--reason \"preprocessing on CPU\")", ErrNoReason)
	case human.Printable(reason) != reason:
		return domain.InputErr("the reason %q holds control characters; say it in plain words", reason)
	case utf8.RuneCountInString(reason) > domain.MaxReason:
		return domain.InputErr("the reason is %d characters long; say it in at most %d", utf8.RuneCountInString(reason), domain.MaxReason)
	case d < time.Second:
		return domain.InputErr("hold %s must be at least a second", d)
	}
	return nil
}
