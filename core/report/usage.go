package report

import (
	"cmp"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/storage"
)

// Usage reports, for everyone who booked in the last 30 days, waits in
// line or has usage on record, what they used and what is left them. Used,
// idle and unbooked GPU-hours are the report's, of the last 7 and 30 days,
// read in the same transaction (see recentFigures).
func Usage(c *core.Client) ([]UserUsage, error) {
	now := c.Now()
	var out []UserUsage
	err := c.Ledger().View(c.Context(), func(tx *storage.Tx) error {
		b, err := ledger.Books(tx, c.Host(), now)
		if err != nil {
			return err
		}
		week, month, err := recentFigures(tx, now)
		if err != nil {
			return err
		}
		if b.Usage == nil {
			if b.Usage, err = tx.UserUsages(); err != nil {
				return err
			}
		}
		// What live bookings hold, ahead included, and ended ones held.
		cal := admission.CalendarOf(b.Parts)
		for _, u := range b.Usage {
			rows, err := tx.HeldSince(u.UID, now.Add(-max(admission.UsageMonth, admission.LongestWindow(b.Pol))))
			if err != nil {
				return err
			}
			cal = append(cal, admission.HeldSlots(rows, u.UID)...)
		}
		used := admission.UsageAt(b.Usage, b.Parts, now, b.Pol.HalfLife)
		users := map[int]string{}
		for _, u := range b.Usage {
			users[u.UID] = u.User
		}
		for _, p := range b.Parts {
			users[p.UID] = p.User
		}
		for _, r := range b.Line {
			users[r.UID] = r.User
		}
		for uid, name := range users {
			l := b.LimitsFor(uid, name)
			u := UserUsage{UID: uid, User: name,
				Hours7d:  cal.GpuSeconds(uid, now.Add(-admission.UsageWeek), now) / 3600,
				Hours30d: cal.GpuSeconds(uid, now.Add(-admission.UsageMonth), now) / 3600,
				GPUs:     float64(cal.Peak(admission.OfUser(uid), now, now.Add(time.Nanosecond))) / human.Ppm,
				Usage:    used[uid] / 3600,
				Factor:   admission.FairShare(used[uid], b.Gpus, b.Pol.HalfLife, l.Share),
			}
			w, m := week[name].row(name, ByUser), month[name].row(name, ByUser)
			u.Used7d, u.Idle7d, u.Unbooked7d = w.UsedHours, w.IdleHours, *w.UnbookedHours
			u.Used30d, u.Idle30d, u.Unbooked30d = m.UsedHours, m.IdleHours, *m.UnbookedHours
			if u.Hours30d == 0 && u.GPUs == 0 && u.Usage < 0.05 && !slices.ContainsFunc(b.Line, func(r domain.Request) bool { return r.UID == uid }) &&
				!slices.ContainsFunc(b.Parts, func(p domain.Partition) bool { return p.UID == uid }) {
				continue // nothing in the last 30 days
			}
			for _, p := range b.Parts {
				if p.UID == uid && p.Upcoming(now) {
					u.Ahead += float64(p.TotalPPM()) / human.Ppm
				}
			}
			for _, r := range b.Line {
				if r.UID == uid {
					u.Waiting++
				}
			}
			if !l.Exempt && l.UserGPUs != nil {
				left := max(0, *l.UserGPUs-u.GPUs)
				u.GPUsLeft = &left
			}
			if !l.Exempt && l.UserHours != nil {
				// As admission weighs a request starting now: against the
				// fullest window it would fall in, bookings ahead included.
				booked, _ := cal.HoursPeak(admission.Ask{Uid: uid, Limits: l}, now)
				left := max(0, *l.UserHours-booked)
				u.HoursLeft = &left
			}
			out = append(out, u)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b UserUsage) int { return cmp.Or(cmp.Compare(b.Usage, a.Usage), cmp.Compare(a.User, b.User)) })
	return out, err
}

// recentFigures is each user's figures, by name, as Report counts them by
// user for the last 7 and the last 30 days to now: one pass over the record
// for both. Forced expiries are left out (they read the audit trail, and
// usage shows none).
func recentFigures(tx *storage.Tx, now time.Time) (week, month map[string]figures, err error) {
	weekFrom, monthFrom := now.Add(-admission.UsageWeek), now.Add(-admission.UsageMonth)
	parts, err := tx.Partitions()
	if err != nil {
		return nil, nil, err
	}
	usage, err := tx.BookingUsages()
	if err != nil {
		return nil, nil, err
	}
	week, month = map[string]figures{}, map[string]figures{}
	for _, p := range parts {
		addTo(week, p.User, bookingFigures(p, usage[p.ID], weekFrom, now))
		addTo(month, p.User, bookingFigures(p, usage[p.ID], monthFrom, now))
	}
	// Unbooked use is by day: every day from the one the window starts in.
	unbooked, err := tx.Unbooked(monthFrom)
	weekDay := utcDay(weekFrom)
	for _, d := range unbooked {
		f := figures{unbooked: d.GPUTime.Seconds()}
		addTo(month, d.User, f)
		if !d.Day.Before(weekDay) {
			addTo(week, d.User, f)
		}
	}
	return week, month, err
}
