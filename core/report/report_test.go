package report

import (
	"cmp"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage"
)

// reportLedger is a ledger holding bookings and usage whose report figures
// are known exactly. now is 2026-11-29 12:00 UTC; users are real ones (root,
// daemon, nobody), so that their groups can be looked up.
func reportLedger(t *testing.T) (*core.Client, time.Time) {
	t.Helper()
	clock := coretest.NewFakeClock()
	now := clock.Now()
	c := servicetest.ClientAt(filepath.Join(t.TempDir(), "chronos.db"), clock, coretest.Root)
	h := time.Hour
	day := 24 * h
	type seed struct {
		uid          int
		user         string
		device       int
		share        float64
		created, end time.Duration // before now (end may be after: negative)
		state        domain.State
		used, idle   time.Duration
		reclaimed    bool
	}
	for _, s := range []seed{
		// root: 50% of GPU 0 for 2h, ran out, used 30m, idle 1h.
		{0, "root", 0, 0.5, 3 * h, h, domain.Expired, 30 * time.Minute, h, false},
		// root: 25% of GPU 1 for the last hour, live another hour, used 12m.
		{0, "root", 1, 0.25, h, -h, domain.Live, 12 * time.Minute, 0, false},
		// daemon: all of GPU 0 ten days ago, released after 2 of its 4h.
		{1, "daemon", 0, 1, 10 * day, 10*day - 2*h, domain.Released, h, 0, false},
		// daemon: 50% of GPU 0 for 3h, reclaimed after 2h idle.
		{1, "daemon", 0, 0.5, 5 * h, 2 * h, domain.Expired, 0, 2 * h, true},
		// nobody: 50% of GPU 1 from 8 days ago to 6 days ago: half in a 7-day window.
		{65534, "nobody", 1, 0.5, 8 * day, 6 * day, domain.Expired, 10 * h, 4 * h, false},
	} {
		require.NoError(t, c.Ledger().Update(c.Context(), func(tx *storage.Tx) error {
			p := domain.Partition{Device: s.device, DeviceUUID: "GPU-x", SharePPM: int64(s.share * human.Ppm), UID: s.uid, User: s.user,
				Created: now.Add(-s.created), Expires: now.Add(-s.end), State: s.state}
			if s.state == domain.Released {
				p.Expires = p.Created.Add(4 * h)
			}
			if s.state != domain.Live {
				p.Ended = now.Add(-s.end)
			}
			if err := tx.PutPartition(&p); err != nil {
				return err
			}
			u := domain.BookingUsage{Partition: p.ID, Through: now, GPUTime: s.used, Idle: s.idle}
			if s.reclaimed {
				u.Reclaimed = p.Ended
			}
			return tx.PutBookingUsage(u)
		}))
	}
	require.NoError(t, c.Ledger().Update(c.Context(), func(tx *storage.Tx) error {
		if err := tx.AddUnbooked(now.Add(-day), 65534, "nobody", 90*time.Minute); err != nil {
			return err
		}
		if err := tx.AddUnbooked(now.Add(-40*day), 0, "root", 5*h); err != nil {
			return err
		}
		// Signals: root's first booking still ran at its deadline (forced);
		// nobody's was signalled before it, over budget, and daemon's
		// after it was reclaimed (neither forced).
		for _, e := range []domain.Event{
			{Time: now.Add(-h + 5*time.Second), Kind: domain.EventSignalled, Partition: 1},
			{Time: now.Add(-7 * day), Kind: domain.EventSignalled, Partition: 5},
			{Time: now.Add(-h), Kind: domain.EventSignalled, Partition: 4},
			{Time: now.Add(-h), Kind: domain.EventWarned, Partition: 5},
		} {
			if err := tx.AddEvent(e); err != nil {
				return err
			}
		}
		return nil
	}))
	return c, now
}

func hours(h float64) *float64 { return &h }

func TestReportFiguresAreExact(t *testing.T) {
	t.Parallel()
	c, now := reportLedger(t)

	r, err := Read(c, now.Add(-7*24*time.Hour), ByUser)
	require.NoError(t, err)
	require.Equal(t, []Row{
		// 2 days held, 1 inside: half the share-hours, half of the used and idle time.
		{Key: "nobody", BookedHours: 12, UsedHours: 5, IdleHours: 1, UnbookedHours: hours(1.5), Expired: 1},
		{Key: "daemon", BookedHours: 1.5, IdleHours: 1, UnbookedHours: hours(0), Bookings: 1, Reclaimed: 1},
		{Key: "root", BookedHours: 1.25, UsedHours: 0.7, IdleHours: 0.5, UnbookedHours: hours(0), Bookings: 2, Expired: 1, Forced: 1},
	}, r.Rows)
	require.Equal(t, Row{Key: "total", BookedHours: 14.75, UsedHours: 5.7, IdleHours: 2.5, UnbookedHours: hours(1.5), Bookings: 3, Reclaimed: 1, Expired: 2, Forced: 1}, r.Total)

	// Thirty days take in daemon's old booking (the 2h it was held), not
	// root's unbooked use 40 days ago.
	r, err = Read(c, now.Add(-30*24*time.Hour), ByUser)
	require.NoError(t, err)
	require.Equal(t, Row{Key: "nobody", BookedHours: 24, UsedHours: 10, IdleHours: 2, UnbookedHours: hours(1.5), Bookings: 1, Expired: 1}, r.Rows[0])
	require.Equal(t, Row{Key: "daemon", BookedHours: 3.5, UsedHours: 1, IdleHours: 1, UnbookedHours: hours(0), Bookings: 2, Reclaimed: 1}, r.Rows[1])

	// Since the ledger began: root's unbooked use too.
	r, err = Read(c, time.Time{}, ByUser)
	require.NoError(t, err)
	require.Equal(t, hours(5), r.Rows[2].UnbookedHours)

	// By GPU: no unbooked figure, GPUs in order.
	r, err = Read(c, now.Add(-7*24*time.Hour), ByGPU)
	require.NoError(t, err)
	require.Equal(t, []Row{
		{Key: "0", BookedHours: 2.5, UsedHours: 0.5, IdleHours: 1.5, Bookings: 2, Reclaimed: 1, Expired: 1, Forced: 1},
		{Key: "1", BookedHours: 12.25, UsedHours: 5.2, IdleHours: 1, Bookings: 1, Expired: 1},
	}, r.Rows)
}

// A booking made ahead counts from its start: nothing before, then what
// has passed of it.
func TestReportCountsBookingsAheadFromTheirStart(t *testing.T) {
	t.Parallel()
	clock := coretest.NewFakeClock()
	c := servicetest.NewClient(t, clock, coretest.Alice)
	now := clock.Now()
	_, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: 2 * time.Hour, Start: now.Add(time.Hour)})
	require.NoError(t, err)
	clock.Advance(30 * time.Minute)
	r, err := Read(c, now.Add(-time.Hour), ByUser)
	require.NoError(t, err)
	require.Zero(t, r.Total.BookedHours)
	require.Zero(t, r.Total.Bookings, "it starts after the window")
	clock.Advance(2 * time.Hour) // 1.5h into it
	r, err = Read(c, now.Add(-time.Hour), ByUser)
	require.NoError(t, err)
	require.InDelta(t, 0.75, r.Total.BookedHours, 1e-9)
	require.Equal(t, 1, r.Total.Bookings, "begun in the window")
}

func TestReportByGroup(t *testing.T) {
	t.Parallel()
	c, now := reportLedger(t)
	r, err := Read(c, now.Add(-7*24*time.Hour), ByGroup)
	require.NoError(t, err)
	group := func(name string) string {
		u, err := user.Lookup(name)
		require.NoError(t, err)
		g, err := user.LookupGroupId(u.Gid)
		require.NoError(t, err)
		return g.Name
	}
	byKey := map[string]Row{}
	for _, row := range r.Rows {
		byKey[row.Key] = row
	}
	require.InDelta(t, 12, byKey[group("nobody")].BookedHours, 1e-9)
	require.InDelta(t, 1.25, byKey[group("root")].BookedHours, 1e-9)
	require.InDelta(t, 1.5, *byKey[group("nobody")].UnbookedHours, 1e-9)
	require.Equal(t, "?", GroupName(54321), "a uid with no user")
}

// By group, a user counts in every group they are in, not only their
// primary one (on Debian that repeated --by user); the total counts each
// booking once. The two users' groups are put in the lookup cache, as
// NSS would answer: no account here is in two groups.
func TestReportByGroupCountsEveryGroup(t *testing.T) {
	t.Parallel()
	clock := coretest.NewFakeClock()
	carol, dan := domain.Identity{UID: 424201, User: "carol"}, domain.Identity{UID: 424202, User: "dan"}
	kernel := time.Now() // the cache ages on the kernel's clock
	proc.KnownGroups.Lock()
	if proc.KnownGroups.Of == nil {
		proc.KnownGroups.Of = map[int]proc.GroupsAt{}
	}
	proc.KnownGroups.Of[carol.UID] = proc.GroupsAt{Names: []string{"lab", "students"}, At: kernel}
	proc.KnownGroups.Of[dan.UID] = proc.GroupsAt{Names: []string{"lab"}, At: kernel}
	proc.KnownGroups.Unlock()
	path := filepath.Join(t.TempDir(), "chronos.db")
	for _, who := range []domain.Identity{carol, dan} {
		_, err := servicetest.ClientAt(path, clock, who).Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: 2 * time.Hour})
		require.NoError(t, err)
	}
	clock.Advance(time.Hour)
	r, err := Read(servicetest.ClientAt(path, clock, coretest.Root), clock.Now().Add(-2*time.Hour), ByGroup)
	require.NoError(t, err)
	byKey := map[string]Row{}
	for _, row := range r.Rows {
		byKey[row.Key] = row
	}
	require.Len(t, byKey, 2)
	require.InDelta(t, 1, byKey["lab"].BookedHours, 1e-9, "carol's half hour and dan's")
	require.Equal(t, 2, byKey["lab"].Bookings)
	require.InDelta(t, 0.5, byKey["students"].BookedHours, 1e-9, "carol's")
	require.InDelta(t, 1, r.Total.BookedHours, 1e-9, "each booking once")
	require.Equal(t, 2, r.Total.Bookings)
}

func TestReportRefusesAnUnknownCut(t *testing.T) {
	t.Parallel()
	c, _ := reportLedger(t)
	_, err := Read(c, time.Time{}, "host")
	require.ErrorIs(t, err, domain.ErrInput)
	require.ErrorContains(t, err, `--by "host": use user, group or gpu`)
}

// UserTotals gives what a report since the ledger began gives, and reads a
// settled booking only once.
func TestUserTotalsAgreeAndSettle(t *testing.T) {
	t.Parallel()
	c, _ := reportLedger(t)
	var totals UserTotals
	all := func() []Row {
		r, err := Read(c, time.Time{}, ByUser)
		require.NoError(t, err)
		slices.SortFunc(r.Rows, func(a, b Row) int { return strings.Compare(a.Key, b.Key) })
		for i := range r.Rows {
			r.Rows[i].Forced = 0 // not counted for metrics: see UserTotals
		}
		return r.Rows
	}
	read := func() []Row {
		rows, err := totals.Read(c)
		require.NoError(t, err)
		return rows
	}
	require.Equal(t, all(), read())
	require.Equal(t, all(), read(), "a second read, from what settled")

	// A new booking shows; root's live one keeps counting its time.
	_, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	require.Equal(t, all(), read())

	// A settled booking is not read again: what a monitor might still
	// change there (it cannot, past settleAfter) does not cost a scrape.
	require.NoError(t, c.Ledger().Update(c.Context(), func(tx *storage.Tx) error {
		u, _, err := tx.BookingUsage(3)
		u.GPUTime += time.Hour
		if err != nil {
			return err
		}
		return tx.PutBookingUsage(u)
	}))
	rows := read()
	require.InDelta(t, all()[0].UsedHours-1, rows[0].UsedHours, 1e-9, "daemon's old booking, read once")
	require.Equal(t, "daemon", rows[0].Key)
}

// Usage's used, idle and unbooked GPU-hours of the last 7 and 30 days are
// the report's of those windows, bookings and unbooked days across either
// window's start included; one read transaction gives both windows and
// the rest of usage.
func TestUsageHoursAreTheReports(t *testing.T) {
	t.Parallel()
	c, now := reportLedger(t)
	day := 24 * time.Hour
	require.NoError(t, c.Ledger().Update(c.Context(), func(tx *storage.Tx) error {
		// daemon: all of GPU 1 from 31 days ago to 29 days ago.
		p := domain.Partition{Device: 1, DeviceUUID: "GPU-x", SharePPM: human.Ppm, UID: 1, User: "daemon",
			Created: now.Add(-31 * day), Expires: now.Add(-29 * day), Ended: now.Add(-29 * day), State: domain.Expired}
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		if err := tx.PutBookingUsage(domain.BookingUsage{Partition: p.ID, Through: p.Ended, GPUTime: 6 * time.Hour, Idle: 3 * time.Hour}); err != nil {
			return err
		}
		// nobody: unbooked use on the day the week starts in, and the day before.
		if err := tx.AddUnbooked(now.Add(-7*day), 65534, "nobody", time.Hour); err != nil {
			return err
		}
		if err := tx.AddUnbooked(now.Add(-8*day), 65534, "nobody", 2*time.Hour); err != nil {
			return err
		}
		parts, err := tx.Partitions()
		for _, p := range parts { // what the ending of each wrote for fair share
			if p.State != domain.Live {
				err = cmp.Or(err, tx.AddHeld(p.UID, domain.Held{Partition: p.ID, Start: p.Created, End: p.Ended, SharePPM: p.SharePPM}))
			}
		}
		err = cmp.Or(err, tx.PutUserUsage(domain.UserUsage{UID: 1, User: "daemon", GPUSeconds: 3600, At: now}))
		return cmp.Or(err, tx.PutUserUsage(domain.UserUsage{UID: 65534, User: "nobody", GPUSeconds: 3600, At: now}))
	}))
	byUser := func(from time.Time) map[string]Row {
		r, err := Read(c, from, ByUser)
		require.NoError(t, err)
		rows := map[string]Row{}
		for _, row := range r.Rows {
			rows[row.Key] = row
		}
		return rows
	}
	week, month := byUser(now.Add(-7*day)), byUser(now.Add(-30*day))

	store := &coretest.CountingStore{Store: c.Ledger()}
	users, err := Usage(core.NewClient(core.Options{Ledger: store, Clock: c.Clock(), As: &coretest.Root}))
	require.NoError(t, err)
	require.Equal(t, int64(1), store.Views.Load(), "read transactions")
	require.Len(t, users, 3)
	for _, u := range users {
		w, m := week[u.User], month[u.User]
		require.InDelta(t, w.UsedHours, u.Used7d, 1e-9, u.User)
		require.InDelta(t, w.IdleHours, u.Idle7d, 1e-9, u.User)
		require.InDelta(t, *w.UnbookedHours, u.Unbooked7d, 1e-9, u.User)
		require.InDelta(t, m.UsedHours, u.Used30d, 1e-9, u.User)
		require.InDelta(t, m.IdleHours, u.Idle30d, 1e-9, u.User)
		require.InDelta(t, *m.UnbookedHours, u.Unbooked30d, 1e-9, u.User)
	}
	nobody := users[slices.IndexFunc(users, func(u UserUsage) bool { return u.User == "nobody" })]
	require.InDelta(t, 2.5, nobody.Unbooked7d, 1e-9, "yesterday's 1.5h and the week's first day's hour")
	require.InDelta(t, 4.5, nobody.Unbooked30d, 1e-9)
	daemon := users[slices.IndexFunc(users, func(u UserUsage) bool { return u.User == "daemon" })]
	require.InDelta(t, 1+3, daemon.Used30d, 1e-9, "half of the booking across the month's start")
}

// A booking of several GPUs counts its GPU-hours on all of them: a user's
// row has them all, and by GPU each GPU has its share, the booking once
// in the total.
func TestReportCountsEveryGPUOfABooking(t *testing.T) {
	t.Parallel()
	clock := coretest.NewFakeClock()
	c := servicetest.NewClient(t, clock, coretest.Alice)
	now := clock.Now()
	_, err := c.Create(core.Request{Device: 0, Devices: []int{0, 1}, Memory: human.Fraction(0.5), Duration: 2 * time.Hour})
	require.NoError(t, err)
	clock.Advance(time.Hour)
	r, err := Read(c, now.Add(-time.Hour), ByUser)
	require.NoError(t, err)
	require.Len(t, r.Rows, 1)
	require.InDelta(t, 1.0, r.Rows[0].BookedHours, 1e-9, "an hour of half of two GPUs")
	r, err = Read(c, now.Add(-time.Hour), ByGPU)
	require.NoError(t, err)
	require.Len(t, r.Rows, 2)
	for _, row := range r.Rows {
		require.InDelta(t, 0.5, row.BookedHours, 1e-9, row.Key)
		require.Equal(t, 1, row.Bookings, row.Key)
	}
	require.InDelta(t, 1.0, r.Total.BookedHours, 1e-9)
	require.Equal(t, 1, r.Total.Bookings, "one booking")
}
