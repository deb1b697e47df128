package core

import (
	"cmp"
	"os/user"
	"slices"
	"strconv"
	"time"

	"github.com/chronos-gpu/chronos/storage"
)

// ReportBy is what a usage report's rows are: users, their groups, or GPUs.
type ReportBy string

const (
	ReportByUser  ReportBy = "user"
	ReportByGroup ReportBy = "group"
	ReportByGPU   ReportBy = "gpu"
)

// ReportBys are the ways a report can be cut, as --by takes them.
var ReportBys = []ReportBy{ReportByUser, ReportByGroup, ReportByGPU}

// ParseReportBy reads --by.
func ParseReportBy(s string) (ReportBy, error) {
	if slices.Contains(ReportBys, ReportBy(s)) {
		return ReportBy(s), nil
	}
	return "", inputErr("--by %s: use user, group or gpu", Quote(s))
}

// Report sums the ledger's record of GPU use in [from, now), one row per
// user (or group, or GPU), largest booker first, with a total:
//
//   - booked: share-weighted GPU-hours held (50% of a GPU for 2h is 1);
//   - used: GPU time the bookings' processes used, as monitors measured it;
//   - idle: share-weighted GPU-hours held while the booking sat idle;
//   - unbooked: GPU time a user's processes used with no booking (by day:
//     every day from the one from falls in; not recorded per GPU);
//   - bookings made, reclaimed for idling, and expired (ended at their
//     deadline, not released).
//
// Monitors record a booking's use as one running total, so a booking that
// straddles from counts the part of its used and idle time in proportion
// to its time held inside the window. A zero from reports everything.
func (c *Client) Report(from time.Time, by ReportBy) (Report, error) {
	if _, err := ParseReportBy(string(by)); err != nil {
		return Report{}, err
	}
	now := c.now()
	rows := map[string]*figures{}
	row := func(key string) *figures {
		if rows[key] == nil {
			rows[key] = &figures{}
		}
		return rows[key]
	}
	groups := map[int]string{}
	keyOf := func(uid int, name string) string {
		if by != ReportByGroup {
			return name
		}
		g, ok := groups[uid]
		if !ok {
			g = GroupName(uid)
			groups[uid] = g
		}
		return g
	}
	err := c.ledger.View(func(tx *storage.Tx) error {
		parts, err := tx.Partitions()
		if err != nil {
			return err
		}
		usage, err := tx.BookingUsages()
		if err != nil {
			return err
		}
		for _, p := range parts {
			key := keyOf(p.UID, p.User)
			if by == ReportByGPU {
				key = strconv.Itoa(p.Device)
			}
			row(key).add(bookingFigures(p, usage[p.ID], from, now))
		}
		if by == ReportByGPU {
			return nil
		}
		unbooked, err := tx.Unbooked(from)
		for _, d := range unbooked {
			row(keyOf(d.UID, d.User)).unbooked += d.GPUTime.Seconds()
		}
		return err
	})
	if err != nil {
		return Report{}, err
	}
	r := Report{From: from.UTC(), To: now.UTC(), By: by}
	var total figures
	for key, f := range rows {
		if *f != (figures{}) {
			r.Rows = append(r.Rows, f.row(key, by))
			total.add(*f)
		}
	}
	r.Total = total.row("total", by)
	slices.SortFunc(r.Rows, func(a, b ReportRow) int {
		if by == ReportByGPU {
			x, _ := strconv.Atoi(a.Key)
			y, _ := strconv.Atoi(b.Key)
			return cmp.Compare(x, y)
		}
		return cmp.Or(cmp.Compare(b.BookedHours, a.BookedHours), cmp.Compare(a.Key, b.Key))
	})
	return r, nil
}

// figures are one booking's or one row's sums, in seconds.
type figures struct {
	booked, used, idle, unbooked float64
	bookings, reclaimed, expired int
}

func (f *figures) add(g figures) {
	f.booked += g.booked
	f.used += g.used
	f.idle += g.idle
	f.unbooked += g.unbooked
	f.bookings += g.bookings
	f.reclaimed += g.reclaimed
	f.expired += g.expired
}

// row is f as a report prints it, in hours; unbooked use is not recorded
// per GPU.
func (f figures) row(key string, by ReportBy) ReportRow {
	r := ReportRow{Key: key, BookedHours: f.booked / 3600, UsedHours: f.used / 3600, IdleHours: f.idle / 3600,
		Bookings: f.bookings, Reclaimed: f.reclaimed, Expired: f.expired}
	if by != ReportByGPU {
		h := f.unbooked / 3600
		r.UnbookedHours = &h
	}
	return r
}

// bookingFigures is what one booking adds to a report of [from, to).
func bookingFigures(p storage.Partition, u storage.BookingUsage, from, to time.Time) figures {
	var f figures
	end := p.Expires
	if !p.Ended.IsZero() {
		end = earlier(end, p.Ended)
	}
	held := earlier(end, to).Sub(p.Created)
	inside := earlier(end, to).Sub(later(p.Created, from))
	if held > 0 && inside > 0 {
		share := ShareOf(p.SharePPM)
		part := inside.Seconds() / held.Seconds()
		f.booked = share * inside.Seconds()
		f.used = u.GPUTime.Seconds() * part
		f.idle = share * u.Idle.Seconds() * part
	}
	within := func(t time.Time) bool { return !t.IsZero() && !t.Before(from) && t.Before(to) }
	if within(p.Created) {
		f.bookings = 1
	}
	switch {
	case within(u.Reclaimed):
		f.reclaimed = 1
	case u.Reclaimed.IsZero() && p.State != storage.Released && within(end):
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
