package core

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// onLedger is one ledger, on either engine, with a client per identity,
// on one fake clock.
type onLedger struct {
	open  storetest.Opener
	clock *clock.Fake
}

func newLedger(open storetest.Opener) *onLedger {
	return &onLedger{open: open, clock: coretest.NewFakeClock()}
}

func (l *onLedger) as(who domain.Identity) *Client { return clientOn(l.open(), l.clock, who) }

func (l *onLedger) events(t *testing.T) []domain.Event {
	t.Helper()
	evs, err := l.as(coretest.Root).Events(0, 0)
	require.NoError(t, err)
	return evs
}

func half(dev int, d time.Duration) Request {
	return Request{Device: dev, Memory: human.Fraction(0.5), Duration: d}
}

// A start that has passed, or beyond the policy's "ahead", is refused
// and writes nothing.
func TestBookingAheadLimits(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testBookingAheadLimits)
}

func testBookingAheadLimits(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	a := l.as(coretest.Alice)
	now := l.clock.Now()
	_, err := a.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour, Start: now.Add(15 * 24 * time.Hour)})
	require.ErrorIs(t, err, domain.ErrTooFarAhead)
	require.ErrorContains(t, err, "the furthest is 14d (ahead=14d)")
	_, err = a.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour, Start: now.Add(-time.Hour)})
	require.ErrorIs(t, err, domain.ErrInput)
	require.ErrorContains(t, err, "has passed")
	require.Empty(t, l.events(t))
}

// Each quota refuses with its limit, the user's figure and when it frees;
// root is held to them until the policy exempts it.
func TestQuotaRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testQuotaRefusals)
}

func testQuotaRefusals(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	r, a := l.as(coretest.Root), l.as(coretest.Alice)
	_, err := r.SetPolicy([]string{"user-gpus=1", "user-hours=3/1d"})
	require.NoError(t, err)

	first, err := a.Create(Request{Device: 0, Memory: human.Fraction(0.6), Duration: time.Hour})
	require.NoError(t, err)
	_, err = a.Create(half(1, time.Hour))
	require.ErrorIs(t, err, domain.ErrQuota)
	require.ErrorContains(t, err, "user-gpus=1: you would hold 1.1 GPUs at once (0.6 already, 0.5 asked). It would fit at "+
		human.FormatTime(first.Expires, l.clock.Now()))
	_, err = a.Create(Request{Device: 1, Memory: human.Fraction(0.4), Duration: time.Hour})
	require.NoError(t, err, "exactly at the limit")

	// 0.6 + 0.4 GPU-hours booked; 2 more hours of a whole GPU is 3.
	_, err = a.Create(Request{Device: 1, Memory: human.Fraction(1), Duration: 3 * time.Hour, Start: first.Expires})
	require.ErrorIs(t, err, domain.ErrQuota)
	require.ErrorContains(t, err, "user-hours=3/1d: 1.0 GPU-hours booked in the window, 3.0 asked")
	_, err = a.Create(Request{Device: 1, Memory: human.Fraction(1), Duration: 2 * time.Hour, Start: first.Expires})
	require.NoError(t, err)

	// More than a quota allows by itself is refused as never, even with --wait.
	_, _, err = a.Enqueue(Request{Device: 0, Memory: human.Fraction(1), Duration: 4 * time.Hour}, admission.WaitOptions{})
	require.ErrorIs(t, err, domain.ErrQuota)
	require.ErrorContains(t, err, "4.0 GPU-hours asked can never be granted")

	// Root is not exempt by default; the policy can make it so.
	_, err = r.Create(Request{Device: 0, Memory: human.Fraction(0.4), Duration: 8 * time.Hour})
	require.ErrorIs(t, err, domain.ErrQuota)
	_, err = r.SetPolicy([]string{"exempt=yes", "for=root"})
	require.NoError(t, err)
	_, err = r.Create(Request{Device: 0, Memory: human.Fraction(0.4), Duration: 8 * time.Hour})
	require.NoError(t, err)

	// A user's own setting wins over the policy's.
	_, err = r.SetPolicy([]string{"user-gpus=2", "user-hours=none", "for=1001"})
	require.NoError(t, err)
	_, err = a.Create(Request{Device: 1, Memory: human.Fraction(0.5), Duration: 10 * time.Hour, Start: l.clock.Now().Add(4 * time.Hour)})
	require.NoError(t, err)
	_, err = r.SetPolicy([]string{"user-gpus=default", "user-hours=default", "for=1001"})
	require.NoError(t, err)
	pol, err := r.Policy()
	require.NoError(t, err)
	require.Len(t, pol.Overrides, 1, "alice's override is gone once empty; root's stays")
}

// A group's setting applies to its members, and a member's own wins.
func TestGroupOverride(t *testing.T) {
	t.Parallel()
	u, err := proc.LookupUser("nobody")
	if err != nil {
		t.Skip("no nobody user here")
	}
	groups := proc.GroupsOf(u.UID)
	if len(groups) == 0 {
		t.Skip("nobody is in no group here")
	}
	p, err := policy.Apply(policy.Default(), []string{"user-gpus=0.25", "for=@" + groups[0]})
	require.NoError(t, err)
	require.Equal(t, new(0.25), policy.LimitsFor(p, u).UserGPUs)
	require.Nil(t, policy.LimitsFor(p, coretest.Alice).UserGPUs, "alice (no account) is in no group")
	p, err = policy.Apply(p, []string{"user-gpus=3", "for=nobody"})
	require.NoError(t, err)
	require.Equal(t, new(3.0), policy.LimitsFor(p, u).UserGPUs)
}

func TestPolicyKnobsReadBack(t *testing.T) {
	t.Parallel()
	p, err := policy.Apply(policy.Default(), []string{"user-gpus=1.5", "user-hours=200/7d", "ahead=2d", "halflife=3d", "age-weight=0.5", "max-age=12h"})
	require.NoError(t, err)
	require.Equal(t, new(1.5), p.UserGPUs)
	require.Equal(t, new(200.0), p.UserHours)
	require.Equal(t, 7*24*time.Hour, p.HoursWindow)
	back, err := policy.Apply(policy.Default(), strings.Fields(policy.Format(p)))
	require.NoError(t, err)
	require.Equal(t, p, back)

	p, err = policy.Apply(p, []string{"share=2", "max=2d", "for=alice"})
	require.NoError(t, err)
	require.Equal(t, "max=2d share=2 for=alice", policy.FormatOverride(p.Overrides[0]))
	back, err = policy.Apply(policy.Default(), strings.Fields(policy.FormatOverride(p.Overrides[0])))
	require.NoError(t, err)
	require.Equal(t, p.Overrides, back.Overrides)

	for _, bad := range [][]string{{"share=2"}, {"expiry=notify", "for=alice"}, {"user-gpus=-1"}, {"user-hours=5/0"},
		{"for=alice", "for=bob", "max=1d"}, {"for=a b", "max=1d"}, {"exempt=maybe", "for=alice"}} {
		_, err := policy.Apply(policy.Default(), bad)
		require.ErrorIs(t, err, domain.ErrInput, "%v", bad)
	}
	c := newTestClient(t, nil, coretest.Root)
	_, err = c.SetPolicy([]string{"user-gpus=1", "for=no-such-user-here"})
	require.ErrorIs(t, err, domain.ErrUnknownUser)

	// A policy stored before fairness reads with its defaults.
	old := policy.Default()
	old.Ahead, old.HalfLife, old.AgeWeight, old.MaxAge = 0, 0, 0, 0
	require.Equal(t, policy.Default(), policy.WithDefaults(old))
}

// The line: requests that do not fit wait; when room appears, the
// transaction that frees it grants them in fair-share order, and a small
// request may pass a large one only where it cannot delay it.
func TestLineGrantsInOrderAndBackfills(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testLineGrantsInOrderAndBackfills)
}

func testLineGrantsInOrderAndBackfills(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	a, b, r := l.as(coretest.Alice), l.as(coretest.Bob), l.as(coretest.Root)
	// Alice has used the machine a lot; bob not at all.
	require.NoError(t, l.open().Update(context.Background(), func(tx *storage.Tx) error {
		return tx.PutUserUsage(domain.UserUsage{UID: coretest.Alice.UID, User: "alice", GPUSeconds: 200 * 3600, At: l.clock.Now()})
	}))
	hold, err := r.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)

	_, qa, err := a.Enqueue(Request{Device: 0, Memory: human.Fraction(0.9), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, qa.Position)
	require.Equal(t, hold.Expires, qa.ETA)
	l.clock.Advance(time.Minute)
	_, qb, err := b.Enqueue(Request{Device: 0, Memory: human.Fraction(0.8), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, qb.Position, "bob's fair share puts him ahead of alice, who came first")
	line, err := b.Queue()
	require.NoError(t, err)
	require.Len(t, line, 2)
	require.Equal(t, qb.ID, line[0].ID)
	require.Equal(t, 2, line[1].Position)
	require.Greater(t, line[0].Factor, line[1].Factor)
	require.Equal(t, hold.Expires.Add(time.Hour), line[1].ETA, "alice waits for bob's hour too")
	require.Contains(t, line[1].Reason, "GPU 0 has 0% free")

	// Backfill: GPU 1 is free, so a request there starts at once; on GPU 0
	// a plain create may not take room kept for those waiting.
	_, err = a.Create(half(1, time.Hour))
	require.NoError(t, err)
	_, err = a.Create(Request{Device: domain.AnyDevice, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err, "any GPU: GPU 1's other half")
	// GPU 0 is full anyway now; give it 20% of room by ending the holder
	// and booking 80% ahead, as root (ahead of nobody: root's usage is 0).

	_, err = r.Release(hold.ID)
	require.NoError(t, err)
	// The release granted bob (80%); alice's 90% does not fit beside it.
	got, err := b.List(false)
	require.NoError(t, err)
	var bobs *Partition
	for i := range got {
		if got[i].UID == coretest.Bob.UID {
			bobs = &got[i]
		}
	}
	require.NotNil(t, bobs, "bob was granted by the release")
	require.Equal(t, int64(800_000), bobs.SharePPM)
	line, err = a.Queue()
	require.NoError(t, err)
	require.Len(t, line, 1)
	require.Equal(t, qa.ID, line[0].ID)
	require.Equal(t, bobs.Expires, line[0].ETA)

	// 20% is free on GPU 0 now. Carol used even more than alice, so she
	// is behind her: her request may start only where it cannot delay
	// alice's ETA (backfill).
	carol := domain.Identity{UID: 1003, User: "carol"}
	require.NoError(t, l.open().Update(context.Background(), func(tx *storage.Tx) error {
		return tx.PutUserUsage(domain.UserUsage{UID: carol.UID, User: "carol", GPUSeconds: 900 * 3600, At: l.clock.Now()})
	}))
	c := l.as(carol)
	_, err = c.Create(Request{Device: 0, Memory: human.Fraction(0.2), Duration: 2 * time.Hour})
	require.ErrorIs(t, err, domain.ErrOverbooked)
	require.ErrorContains(t, err, "kept for requests waiting ahead of you")
	_, err = c.Create(Request{Device: 0, Memory: human.Fraction(0.2), Duration: 30 * time.Minute})
	require.NoError(t, err, "ends before alice's ETA: backfill")
	// Root, who used nothing, is ahead of alice: it may take the room.
	_, err = r.Create(Request{Device: 1, Memory: human.Fraction(0.5), Duration: time.Minute})
	require.ErrorIs(t, err, domain.ErrOverbooked, "GPU 1 is full")

	var kinds []domain.EventKind
	for _, e := range l.events(t) {
		kinds = append(kinds, e.Kind)
	}
	require.Contains(t, kinds, domain.EventQueued)
}

// Readers lay the line out after their transaction ends, from what they
// read in it: a request held back by an hours quota, which weighs what its
// owner's ended bookings held, shows the same place, ETA and reason in
// queue, in its waiter's status and to whoever tends the line as the
// transaction that queued it computed.
func TestLineReadThenLaidOutWeighsHeldHours(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testLineReadThenLaidOutWeighsHeldHours)
}

func testLineReadThenLaidOutWeighsHeldHours(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	r, a := l.as(coretest.Root), l.as(coretest.Alice)
	_, err := r.SetPolicy([]string{"user-hours=2/1d"})
	require.NoError(t, err)
	held, err := a.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: 2 * time.Hour})
	require.NoError(t, err)
	l.clock.Advance(90 * time.Minute)
	_, err = a.Release(held.ID)
	require.NoError(t, err)

	p, q, err := a.Enqueue(Request{Device: 1, Memory: human.Fraction(1), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)
	require.Nil(t, p, "GPU 1 is free: only the 1.5 GPU-hours held keep it waiting")
	require.Contains(t, q.Reason, "user-hours=2/1d: 1.5 GPU-hours booked in the window")
	require.True(t, q.ETA.After(l.clock.Now()))

	line, err := r.Queue()
	require.NoError(t, err)
	require.Len(t, line, 1)
	require.Equal(t, q.Position, line[0].Position)
	require.Equal(t, q.ETA, line[0].ETA)
	require.Equal(t, q.Reason, line[0].Reason)
	e, due, _, err := a.lineStatus(q.ID)
	require.NoError(t, err)
	require.False(t, due)
	require.Equal(t, q.ETA, e.ETA)
	require.Equal(t, q.Reason, e.Reason)
	next, err := r.TendLine()
	require.NoError(t, err)
	require.Equal(t, q.ETA, next)
}

// A request whose time runs out leaves the line; one whose ETA arrives is
// placed by whoever tends the line (a waiter, a monitor) with nothing
// else happening.
func TestLineTimersWithNoOtherActivity(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testLineTimersWithNoOtherActivity)
}

func testLineTimersWithNoOtherActivity(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	a, b := l.as(coretest.Alice), l.as(coretest.Bob)
	hold, err := a.Create(Request{Device: 0, Memory: human.Fraction(0.7), Duration: time.Hour})
	require.NoError(t, err)
	_, waits, err := b.Enqueue(half(0, time.Hour), admission.WaitOptions{})
	require.NoError(t, err)
	_, brief, err := b.Enqueue(half(0, time.Hour), admission.WaitOptions{Timeout: 10 * time.Minute})
	require.NoError(t, err)

	l.clock.Advance(11 * time.Minute)
	next, err := b.TendLine()
	require.NoError(t, err)
	require.False(t, next.IsZero())
	_, due, _, err := b.lineStatus(brief.ID)
	require.NoError(t, err)
	require.False(t, due)
	r, err := b.Request(brief.ID)
	require.NoError(t, err)
	require.Equal(t, domain.TimedOut, r.State)

	l.clock.Advance(hold.Expires.Sub(l.clock.Now()))
	_, err = b.TendLine() // the deadline passed; no monitor flipped it
	require.NoError(t, err)
	r, err = b.Request(waits.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Granted, r.State)
	p, err := b.Get(r.Partition)
	require.NoError(t, err)
	require.Equal(t, "bob", p.User)
	require.Equal(t, l.clock.Now(), p.Start)

	var left []string
	for _, e := range l.events(t) {
		if e.Kind == domain.EventLeft {
			left = append(left, e.Detail)
		}
	}
	require.Len(t, left, 1)
	require.Contains(t, left[0], "waited 10m (--timeout)")
}

// A policy change that makes a waiting request impossible sends it away
// with the reason, in the same transaction.
func TestPolicyChangeSendsAwayWhatCanNeverFit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testPolicyChangeSendsAwayWhatCanNeverFit)
}

func testPolicyChangeSendsAwayWhatCanNeverFit(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	a, r := l.as(coretest.Alice), l.as(coretest.Root)
	_, err := r.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	_, q, err := a.Enqueue(Request{Device: 0, Memory: human.Fraction(0.8), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)
	_, err = r.SetPolicy([]string{"user-gpus=0.5"})
	require.NoError(t, err)
	st, err := a.Request(q.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Cancelled, st.State)
	require.Contains(t, st.Reason, "it can never be granted: over your quota: user-gpus=0.5: 0.8 GPUs asked at once")
	line, err := a.Queue()
	require.NoError(t, err)
	require.Empty(t, line)
}

// Cancelling is for the owner or root; the cancelled request leaves with
// an event and its room goes to the next.
func TestCancel(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testCancel)
}

func testCancel(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	a, b := l.as(coretest.Alice), l.as(coretest.Bob)
	_, err := a.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	_, q, err := a.Enqueue(half(0, time.Hour), admission.WaitOptions{})
	require.NoError(t, err)
	require.ErrorIs(t, b.Cancel(q.ID), domain.ErrNotOwner)
	require.NoError(t, a.Cancel(q.ID))
	require.ErrorIs(t, a.Cancel(q.ID), domain.ErrLeftLine)
	require.ErrorIs(t, a.Cancel(99), domain.ErrNoRequest)
}

// Extending takes room like a new booking: not over a booking made ahead,
// not over the room kept for those waiting, not past a quota.
func TestExtendIsAdmittedLikeABooking(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testExtendIsAdmittedLikeABooking)
}

func testExtendIsAdmittedLikeABooking(t *testing.T, open storetest.Opener) {
	l := newLedger(open)
	a, b := l.as(coretest.Alice), l.as(coretest.Bob)
	p, err := a.Create(Request{Device: 0, Memory: human.Fraction(0.6), Duration: time.Hour})
	require.NoError(t, err)
	_, err = b.Create(Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour, Start: p.Expires.Add(30 * time.Minute)})
	require.NoError(t, err)
	_, err = a.Extend(p.ID, 20*time.Minute)
	require.NoError(t, err)
	_, err = a.Extend(p.ID, 20*time.Minute)
	require.ErrorIs(t, err, domain.ErrOverbooked, "it would run into bob's booking ahead")

	_, _, err = b.Enqueue(half(1, time.Hour), admission.WaitOptions{}) // GPU 1 is free: booked at once
	require.NoError(t, err)
	q, err := a.Create(half(1, time.Hour))
	require.NoError(t, err)
	_, w, err := b.Enqueue(Request{Device: 1, Memory: human.Fraction(0.6), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)
	require.Equal(t, q.Expires, w.ETA)
	_, err = a.Extend(q.ID, time.Minute)
	require.ErrorIs(t, err, domain.ErrOverbooked)
	require.ErrorContains(t, err, "kept for requests waiting ahead")
}

// A process that names a booking which has not started runs on no booking;
// an owner's booking ahead does not claim their processes either.
func TestBookingAheadClaimsNoProcess(t *testing.T) {
	t.Parallel()
	now := clock.System().Now() // the process's real start (as the system clock reads it) is before the booking's end
	ahead := domain.Partition{ID: 3, Device: 0, UID: 1001, SharePPM: 500_000, Bytes: 1 << 30, Created: now,
		Start: now.Add(time.Hour), Expires: now.Add(2 * time.Hour), State: domain.Live}
	pid := os.Getpid()
	start, err := procfs.ProcStartTime(pid)
	require.NoError(t, err)
	s := gpu.Sample{Devices: []gpu.DeviceSample{{Device: gpu.Device{Index: 0}, Processes: []gpu.Process{
		{PID: pid, UID: 1001, StartTime: start, MemoryUsed: 1 << 20, PartitionID: "3"},
		{PID: pid, UID: 1001, StartTime: start, MemoryUsed: 1 << 20},
	}}}}
	for _, a := range admission.Attribute(s, []domain.Partition{ahead}, now) {
		require.Equal(t, admission.Unbooked, a.Verdict)
		require.Zero(t, a.Partition)
	}
}

func TestParseStart(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 30, 0, 0, time.Local)
	for in, want := range map[string]time.Time{
		"14:00":                     time.Date(2026, 11, 29, 14, 0, 0, 0, time.Local),
		"14:00:30":                  time.Date(2026, 11, 29, 14, 0, 30, 0, time.Local),
		"tomorrow 09:00":            time.Date(2026, 11, 30, 9, 0, 0, 0, time.Local),
		"Tomorrow 9:00":             time.Date(2026, 11, 30, 9, 0, 0, 0, time.Local),
		"today 13:00":               time.Date(2026, 11, 29, 13, 0, 0, 0, time.Local),
		"2026-12-01 09:00":          time.Date(2026, 12, 1, 9, 0, 0, 0, time.Local),
		"2026-12-01T09:00":          time.Date(2026, 12, 1, 9, 0, 0, 0, time.Local),
		"2026-12-01T09:00:00Z":      time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		"2026-12-01T09:00:00+01:00": time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC),
		"+2h":                       now.Add(2 * time.Hour),
		"+90m":                      now.Add(90 * time.Minute),
		"now":                       now,
		"12:30":                     now,
		"2pm":                       time.Date(2026, 11, 29, 14, 0, 0, 0, time.Local),
		"2:15 PM":                   time.Date(2026, 11, 29, 14, 15, 0, 0, time.Local),
		"9am":                       time.Date(2026, 11, 30, 9, 0, 0, 0, time.Local), // passed today: tomorrow
		"11:00":                     time.Date(2026, 11, 30, 11, 0, 0, 0, time.Local),
		"tomorrow 9am":              time.Date(2026, 11, 30, 9, 0, 0, 0, time.Local),
		"12am":                      time.Date(2026, 11, 30, 0, 0, 0, 0, time.Local),
	} {
		got, err := human.ParseStart(in, now)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%s: %v, want %v", in, got, want)
	}
	for in, msg := range map[string]string{
		"today 11:00":     "has passed",
		"2025-01-01 9:00": "has passed",
		"+0s":             "must be positive",
		"+-1h":            "must be positive",
		"soon":            "is not a time",
		"":                "empty start",
		"tomorrow":        "is not a time",
		"25:00":           "is not a time",
		"13pm":            "is not a time",
		"+400d":           "absurdly",
	} {
		_, err := human.ParseStart(in, now)
		require.ErrorIs(t, err, domain.ErrInput, in)
		require.ErrorContains(t, err, msg, in)
	}

	// Only a time of day taken for tomorrow's is noted.
	for in, note := range map[string]string{"11:00": "11:00 has passed today: it starts tomorrow, ", "9am": "9am has passed today", "14:00": "",
		"tomorrow 09:00": "", "+2h": "", "2026-12-01 09:00": ""} {
		got, err := human.ParseStart(in, now)
		require.NoError(t, err, in)
		if note == "" {
			require.Empty(t, human.StartNote(in, got, now), in)
		} else {
			require.Contains(t, human.StartNote(in, got, now), note, in)
		}
	}
}
