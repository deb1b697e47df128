// Package report is what the ledger's records add up to: GPU use by user,
// group or GPU (chronos report), each user's use and what their quotas
// leave (chronos usage), one GPU's recent history (the app's history
// view), and every user's totals since the ledger began (metrics). It
// reads through a client, above core.
package report

import (
	"cmp"
	"maps"
	"os/user"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/storage"
)

// By is what a usage report's rows are: users, their groups, or GPUs.
type By string

const (
	ByUser  By = "user"
	ByGroup By = "group"
	ByGPU   By = "gpu"
)

// Bys are the ways a report can be cut, as --by takes them.
var Bys = []By{ByUser, ByGroup, ByGPU}

// ParseBy reads --by.
func ParseBy(s string) (By, error) {
	if slices.Contains(Bys, By(s)) {
		return By(s), nil
	}
	return "", domain.InputErr("--by %s: use user, group or gpu", human.Quote(s))
}

// Read sums the ledger's record of GPU use in [from, now), one row per
// user (or group, or GPU), largest booker first, with a total:
//
//   - booked: share-weighted GPU-hours held (50% of a GPU for 2h is 1);
//   - used: GPU time the bookings' processes used, as monitors measured it;
//   - idle: share-weighted GPU-hours held while the booking sat idle;
//   - unbooked: GPU time a user's processes used with no booking (by day:
//     every day from the one from falls in; not recorded per GPU);
//   - bookings begun (one made ahead counts where it starts), reclaimed for idling, and expired (ended at their
//     deadline, not released); of the expired, those forced: whose
//     processes still ran at the deadline and were signalled (by a monitor
//     or their chronos run), as the audit trail records.
//
// Monitors record a booking's use as one running total, so a booking that
// straddles from counts the part of its used and idle time in proportion
// to its time held inside the window. A zero from reports everything.
//
//nolint:funlen // one pass over the window's bookings that fills every column at once
func Read(c *core.Client, from time.Time, by By) (Report, error) {
	if _, err := ParseBy(string(by)); err != nil {
		return Report{}, err
	}
	now := c.Now()
	type gpuKey struct {
		host string
		dev  int
	}
	gpus := map[string]gpuKey{} // the GPU rows' order
	rows := map[string]*figures{}
	row := func(key string) *figures {
		if rows[key] == nil {
			rows[key] = &figures{}
		}
		return rows[key]
	}
	// By group, a user's figures count in every group they are in; the
	// total counts them once.
	var total figures
	groups := map[int][]string{}
	keysOf := func(uid int, name string) []string {
		if by != ByGroup {
			return []string{name}
		}
		g, ok := groups[uid]
		if !ok {
			if g = proc.GroupsOf(uid); len(g) == 0 {
				g = []string{GroupName(uid)}
			}
			groups[uid] = g
		}
		return g
	}
	err := c.Ledger().View(c.Context(), func(tx *storage.Tx) error {
		parts, err := tx.Partitions()
		if err != nil {
			return err
		}
		usage, err := tx.BookingUsages()
		if err != nil {
			return err
		}
		signalled, err := lastSignals(tx, from)
		if err != nil {
			return err
		}
		for _, p := range parts {
			f := bookingFigures(p, usage[p.ID], from, now)
			if at, ok := signalled[p.ID]; ok && f.expired == 1 && !at.Before(p.Expires) {
				f.forced = 1
			}
			total.add(f)
			if by != ByGPU {
				for _, key := range keysOf(p.UID, p.User) {
					row(key).add(f)
				}
				continue
			}
			// By GPU: a booking of several counts on each of its GPUs
			// as a booking of that GPU alone.
			for _, d := range p.GPUs() {
				key := c.GPUName(p.Host, d)
				gpus[key] = gpuKey{c.OtherHost(p.Host), d}
				g := f
				if len(p.Devices) > 1 {
					g = bookingFigures(p.On(d), usage[p.ID], from, now)
					g.forced = f.forced
				}
				row(key).add(g)
			}
		}
		if by == ByGPU {
			return nil
		}
		unbooked, err := tx.Unbooked(from)
		for _, d := range unbooked {
			for _, key := range keysOf(d.UID, d.User) {
				row(key).unbooked += d.GPUTime.Seconds()
			}
			total.unbooked += d.GPUTime.Seconds()
		}
		return err
	})
	if err != nil {
		return Report{}, err
	}
	r := Report{From: from.UTC(), To: now.UTC(), By: by}
	for key, f := range rows {
		if *f != (figures{}) {
			r.Rows = append(r.Rows, f.row(key, by))
		}
	}
	r.Total = total.row("total", by)
	slices.SortFunc(r.Rows, func(a, b Row) int {
		if by == ByGPU {
			x, y := gpus[a.Key], gpus[b.Key]
			return cmp.Or(cmp.Compare(x.host, y.host), cmp.Compare(x.dev, y.dev))
		}
		return cmp.Or(cmp.Compare(b.BookedHours, a.BookedHours), cmp.Compare(a.Key, b.Key))
	})
	return r, nil
}

// lastSignals is when each booking's processes were last signalled, from
// the audit trail's events since from. A booking that expired inside the
// window was signalled for it at or after its deadline, so inside the window
// too; the scan goes an hour further back in case hosts' clocks differ.
func lastSignals(tx *storage.Tx, from time.Time) (map[uint64]time.Time, error) {
	last := map[uint64]time.Time{}
	err := tx.EventsBackward(func(e domain.Event) (bool, error) {
		if e.Kind == domain.EventSignalled && e.Partition != 0 && e.Time.After(last[e.Partition]) {
			last[e.Partition] = e.Time
		}
		return from.IsZero() || !e.Time.Before(from.Add(-time.Hour)), nil
	})
	return last, err
}

// figures are one booking's or one row's sums, in seconds.
type figures struct {
	booked, used, idle, unbooked         float64
	bookings, reclaimed, expired, forced int
}

func (f *figures) add(g figures) {
	f.booked += g.booked
	f.used += g.used
	f.idle += g.idle
	f.unbooked += g.unbooked
	f.bookings += g.bookings
	f.reclaimed += g.reclaimed
	f.expired += g.expired
	f.forced += g.forced
}

// addTo adds f to user's figures in into.
func addTo(into map[string]figures, user string, f figures) {
	g := into[user]
	g.add(f)
	into[user] = g
}

// utcDay is the start of t's day in UTC, the days unbooked use is
// recorded by.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// row is f as a report prints it, in hours; unbooked use is not recorded
// per GPU.
func (f figures) row(key string, by By) Row {
	r := Row{Key: key, BookedHours: f.booked / 3600, UsedHours: f.used / 3600, IdleHours: f.idle / 3600,
		Bookings: f.bookings, Reclaimed: f.reclaimed, Expired: f.expired, Forced: f.forced}
	if by != ByGPU {
		h := f.unbooked / 3600
		r.UnbookedHours = &h
	}
	return r
}

// bookingFigures is what one booking adds to a report of [from, to).
func bookingFigures(p domain.Partition, u domain.BookingUsage, from, to time.Time) figures {
	var f figures
	end := p.End()
	held := admission.Earlier(end, to).Sub(p.Start) // a booking made ahead holds from its start
	inside := admission.Earlier(end, to).Sub(admission.Later(p.Start, from))
	if held > 0 && inside > 0 {
		share := human.ShareOf(p.TotalPPM())
		part := inside.Seconds() / held.Seconds()
		f.booked = share * inside.Seconds()
		f.used = u.GPUTime.Seconds() * part
		f.idle = share * u.Idle.Seconds() * part
	}
	within := func(t time.Time) bool { return !t.IsZero() && !t.Before(from) && t.Before(to) }
	if within(p.Start) { // a booking made ahead counts where it starts
		f.bookings = 1
	}
	switch {
	case within(u.Reclaimed):
		f.reclaimed = 1
	case u.Reclaimed.IsZero() && p.State != domain.Released && within(end):
		f.expired = 1 // ran out its time, whether or not a monitor has flipped it yet
	}
	return f
}

// GroupName is the name of uid's primary group: its number when the group
// has no name, "?" when the user is unknown.
func GroupName(uid int) string {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return "?"
	}
	if g, err := user.LookupGroupId(u.Gid); err == nil {
		return g.Name
	}
	return u.Gid
}

// settleAfter is how long after its end a booking's figures may still
// change: monitors write a minute's accounting in the next minute, and one
// that fell behind catches up within a few.
const settleAfter = 10 * domain.AccountEvery

// UserTotals is every user's figures since the ledger began, kept for
// metrics, which Prometheus reads every few seconds for as long as the
// machine is used. Each Read reads only what may still change: the
// bookings not yet settled (ended more than settleAfter ago), and the
// unbooked use of the last two days. A settled booking is added once and
// not read again, so a scrape costs the same with a year of history.
// Forced expiries are left out: counting them reads the audit trail, and
// no metric serves them.
type UserTotals struct {
	// Keep picks the bookings counted (nil: all). Unbooked use, which is
	// recorded per user and day but not per host, is counted only when
	// every booking is.
	Keep func(domain.Partition) bool

	mu      sync.Mutex
	next    uint64             // the bookings numbered below are all in settled
	folded  map[uint64]bool    // bookings numbered next and up already in settled
	settled map[string]figures // by user
	daysTo  time.Time          // the unbooked use of the days before is in settled
}

// Read returns each user's figures since the ledger began, by name.
func (t *UserTotals) Read(c *core.Client) ([]Row, error) {
	return t.ReadAlong(c, c.Now(), nil)
}

// ReadAlong is Read as of now, in one transaction with also (unless nil),
// which reads more of the ledger in it.
func (t *UserTotals) ReadAlong(c *core.Client, now time.Time, also func(*storage.Tx) error) ([]Row, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.settled == nil {
		t.next, t.folded, t.settled = 1, map[uint64]bool{}, map[string]figures{}
	}
	closed := utcDay(now).AddDate(0, 0, -1) // days before yesterday change no more
	sums, settle := maps.Clone(t.settled), map[string]figures{}
	var settledIDs []uint64
	next := t.next
	err := c.Ledger().View(c.Context(), func(tx *storage.Tx) error {
		if also != nil {
			if err := also(tx); err != nil {
				return err
			}
		}
		parts, err := tx.PartitionsFrom(t.next)
		if err != nil {
			return err
		}
		if len(parts) > 0 {
			next = parts[len(parts)-1].ID + 1 // unless one below has not settled
		}
		parts = slices.DeleteFunc(parts, func(p domain.Partition) bool { return t.folded[p.ID] })
		ids := make([]uint64, len(parts))
		for i, p := range parts {
			ids[i] = p.ID
		}
		usage, err := tx.UsageOf(ids) // at once: on etcd a read is a round trip
		if err != nil {
			return err
		}
		for i, p := range parts {
			if t.Keep != nil && !t.Keep(p) {
				settledIDs = append(settledIDs, p.ID) // never counted: as good as settled
				continue
			}
			f := bookingFigures(p, usage[i], time.Time{}, now)
			addTo(sums, p.User, f)
			if (p.State != domain.Live || !now.Before(p.Expires)) && now.Sub(p.End()) > settleAfter {
				addTo(settle, p.User, f)
				settledIDs = append(settledIDs, p.ID)
			} else {
				next = min(next, p.ID)
			}
		}
		if t.Keep != nil {
			return nil
		}
		uses, err := tx.Unbooked(t.daysTo)
		for _, u := range uses {
			addTo(sums, u.User, figures{unbooked: u.GPUTime.Seconds()})
			if u.Day.Before(closed) && !u.Day.Before(t.daysTo) {
				addTo(settle, u.User, figures{unbooked: u.GPUTime.Seconds()})
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for user, f := range settle {
		addTo(t.settled, user, f)
	}
	for _, id := range settledIDs {
		t.folded[id] = true
	}
	if next > t.next {
		t.next = next
		maps.DeleteFunc(t.folded, func(id uint64, _ bool) bool { return id < next })
	}
	t.daysTo = admission.Later(t.daysTo, closed)
	rows := make([]Row, 0, len(sums))
	for user, f := range sums {
		rows = append(rows, f.row(user, ByUser))
	}
	slices.SortFunc(rows, func(a, b Row) int { return cmp.Compare(a.Key, b.Key) })
	return rows, nil
}
