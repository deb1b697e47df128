package core

import (
	"errors"
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/storage"
)

// GPUHost resolves the host a request names: none, or this host's own
// name, is this host; another name is that host's GPU, which only a ledger
// many hosts share holds.
func (c *Client) GPUHost(host string) (string, error) {
	switch {
	case host == "" || host == c.host:
		return c.host, nil
	case c.host == "" && host == setup.HostName():
		return "", nil
	case c.host == "":
		return "", fmt.Errorf("%w: %s is another host, and this ledger (%s) is this host's alone; a lab of hosts shares one ledger on etcd (see chronos init --store)", domain.ErrNoDevice, host, c.ledger)
	}
	return host, nil
}

// GPUName names a GPU as people type it: its index on this host,
// host:index on another.
func (c *Client) GPUName(host string, device int) string {
	return admission.GpuName(c.host, host, device)
}

// GPUsName names GPUs of a host as people type them: 0-3 on this host,
// host:0,1 on another.
func (c *Client) GPUsName(host string, devices []int) string {
	return admission.GpusName(c.host, host, devices)
}

// GPUName names the booking's GPUs as GPUsName does (host:index for
// another host's GPU; 0-3 for several).
func (p Partition) GPUName() string {
	if len(p.Devices) > 1 {
		if p.client == nil {
			return human.FormatGPUs(p.Host, p.Devices)
		}
		return p.client.GPUsName(p.Host, p.Devices)
	}
	if p.client == nil {
		return human.FormatGPU(p.Host, p.Device)
	}
	return p.client.GPUName(p.Host, p.Device)
}

// OtherHost is host when it is another host, else empty.
func (c *Client) OtherHost(host string) string {
	if host == c.host {
		return ""
	}
	return host
}

// List returns bookings, oldest first: the live and upcoming ones, or with
// all, every booking ever made that the ledger still holds.
func (c *Client) List(all bool) ([]Partition, error) {
	var out []Partition
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		var err error
		out, err = c.ListIn(tx, all, c.now())
		return err
	})
	return out, err
}

// ListIn is List in tx, as of now.
func (c *Client) ListIn(tx *storage.Tx, all bool, now time.Time) ([]Partition, error) {
	read := tx.LivePartitions
	if all {
		read = tx.Partitions
	}
	parts, err := read()
	if err != nil {
		return nil, err
	}
	var out []Partition
	seen := c.seenIn(tx)
	for _, p := range parts {
		if all || !p.EndedAt(now) {
			out = append(out, seen(p))
		}
	}
	return out, withUsage(tx, out, func(Partition) bool { return true })
}

// withUsage fills in what monitors measured of the bookings of parts that
// want it, in one read: on etcd a read is a round trip.
func withUsage(tx *storage.Tx, parts []Partition, want func(Partition) bool) error {
	var ids []uint64
	var at []int
	for i, p := range parts {
		if want(p) {
			ids, at = append(ids, p.ID), append(at, i)
		}
	}
	usage, err := tx.UsageOf(ids)
	for i := range usage {
		parts[at[i]].Usage = usage[i]
	}
	return err
}

// Get returns one booking, live or not.
func (c *Client) Get(id uint64) (*Partition, error) {
	var w Partition
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		p, err := getPartition(tx, id)
		w = c.seenIn(tx)(p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &w, nil
}

func getPartition(tx *storage.Tx, id uint64) (domain.Partition, error) {
	p, err := tx.Partition(id)
	if errors.Is(err, storage.ErrNotFound) {
		return p, fmt.Errorf("%w: %d", domain.ErrNoPartition, id)
	}
	return p, err
}

// Mine fetches a live or upcoming partition the client may change: its
// owner's, or any for root.
func (c *Client) Mine(tx *storage.Tx, id uint64, verb string) (domain.Partition, error) {
	p, err := getPartition(tx, id)
	if err != nil {
		return p, err
	}
	if !c.me.MayChange(p.UID) {
		return p, fmt.Errorf("%w: %d belongs to %s; only they or root may %s it", domain.ErrNotOwner, id, p.User, verb)
	}
	if now := c.now(); p.EndedAt(now) {
		state := p.State
		if state == domain.Live {
			state = domain.Expired
		}
		return p, fmt.Errorf("%w: %d is %s", domain.ErrNotLive, id, state)
	}
	return p, nil
}

// Release ends a live booking now (or cancels an upcoming one), and in the
// same transaction gives the room to the waiting line. Its owner or root
// may.
func (c *Client) Release(id uint64) (Partition, error) {
	var p domain.Partition
	var more bool
	err := c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		var err error
		if p, err = c.Mine(tx, id, "release"); err != nil {
			return err
		}
		if err := ledger.EndBooking(tx, &p, domain.Released, c.now(), ledger.PolicyOnce(tx)); err != nil {
			return err
		}
		if err := c.RecordEvent(tx, domain.EventReleased, p, ""); err != nil {
			return err
		}
		more, err = c.PlaceLine(tx)
		return err
	})
	if err == nil {
		c.PlaceRest(more)
	}
	return c.wrap(p), err
}

// Extend moves a live or upcoming booking's deadline later by d. Its owner
// or root may; the time left afterwards may not exceed the policy's
// maximum length, and the added time is admitted like a new booking.
func (c *Client) Extend(id uint64, d time.Duration) (Partition, error) {
	if d < time.Second {
		return Partition{}, domain.InputErr("extension %s must be at least a second", d)
	}
	var p domain.Partition
	err := c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		var err error
		if p, err = c.Mine(tx, id, "extend"); err != nil {
			return err
		}
		now := c.now()
		b, err := ledger.Books(tx, c.host, now)
		if err != nil {
			return err
		}
		if p.UID != c.me.UID {
			b.OnBehalf = p.User
		}
		lim := b.LimitsFor(p.UID, p.User)
		expires := p.Expires.Add(d)
		if left := expires.Sub(admission.Later(now, p.Start)); left > lim.MaxLength && !lim.Exempt {
			return fmt.Errorf("%w: that would leave %s, the most is %s", domain.ErrTooLong, human.FormatDuration(left), human.FormatDuration(lim.MaxLength))
		}
		// The added time is a new interval on the calendar: it must fit
		// beside the bookings (some may start ahead), the owner's quotas,
		// and the places kept for requests waiting in line.
		plan, err := b.Plan(nil)
		if err != nil {
			return err
		}
		cal := plan.Cal
		if !plan.HeldOf[p.UID] {
			held, err := b.Held(p.UID)
			if err != nil {
				return err
			}
			cal = append(cal, held...)
		}
		more, fit := b.ExtensionOf(p, d)
		if blk := cal.Check(more, p.Expires); blk != nil {
			return fmt.Errorf("extend %d by %s: %w", id, human.FormatDuration(d), b.Refusal(cal, blk, fit, p.Expires, false))
		}
		p.Expires, p.Warned = expires, false
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		return c.RecordEvent(tx, domain.EventExtended, p, human.FormatDuration(d)+" more, until "+expires.UTC().Format(time.RFC3339))
	})
	return c.wrap(p), err
}

// Events returns audit events numbered after seq (0: from the start), at most
// limit (0: all).
func (c *Client) Events(after uint64, limit int) ([]domain.Event, error) {
	var out []domain.Event
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		var err error
		out, err = tx.Events(after, limit)
		return err
	})
	return out, err
}

// LastEvents returns the newest n audit events, oldest first, reading only
// those: the trail grows for as long as the machine is used.
func (c *Client) LastEvents(n int) ([]domain.Event, error) { return c.FindEvents(EventFilter{}, n) }

// Recent returns the live bookings and those made within the window (zero:
// long enough that every booking that can still have processes is in it):
// what attributing GPU processes needs, without reading the whole history.
// Live bookings come with their usage.
func (c *Client) Recent(window time.Duration) ([]Partition, error) {
	var out []Partition
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		if window <= 0 {
			pol, err := ledger.Policy(tx)
			if err != nil {
				return err
			}
			window = pol.MaxLength + admission.AttributionWindow
		}
		parts, err := tx.PartitionsSince(c.now().Add(-window))
		seen := c.seenIn(tx)
		for _, p := range parts {
			out = append(out, seen(p))
		}
		if err != nil {
			return err
		}
		// Whether each live booking sits idle; what ended has no idle to show.
		now := c.now()
		return withUsage(tx, out, func(p Partition) bool { return p.LiveAt(now) })
	})
	return out, err
}
