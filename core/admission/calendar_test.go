package admission

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// The booked share is piecewise constant over half-open intervals: a
// booking ending at 10 and one starting at 10 never overlap.
func TestCalendarPeakIsHalfOpen(t *testing.T) {
	t.Parallel()
	gpu0, gpu1, other0 := GpuID{Device: 0}, GpuID{Device: 1}, GpuID{Host: "gpu3", Device: 0}
	cal := Calendar{
		{gpu: gpu0, uid: 1, share: 600_000, start: at(0), end: at(10)},
		{gpu: gpu0, uid: 2, share: 400_000, start: at(10), end: at(20)},
		{gpu: gpu0, uid: 2, share: 300_000, start: at(15), end: at(30)},
		{gpu: gpu1, uid: 1, share: 900_000, start: at(0), end: at(30)},
		{gpu: other0, uid: 1, share: 800_000, start: at(0), end: at(30)},
	}
	require.Equal(t, int64(600_000), cal.BookedAt(gpu0, at(9)))
	require.Equal(t, int64(400_000), cal.BookedAt(gpu0, at(10)))
	require.Equal(t, int64(700_000), cal.BookedAt(gpu0, at(15)))
	require.Equal(t, int64(300_000), cal.BookedAt(gpu0, at(20)))
	require.Equal(t, int64(0), cal.BookedAt(gpu0, at(30)))
	require.Equal(t, int64(800_000), cal.BookedAt(other0, at(20)), "another host's GPU 0 is another GPU")
	require.Equal(t, int64(600_000), cal.Peak(onGPU(gpu0), at(0), at(15)), "the start at 15 is outside [0, 15)")
	require.Equal(t, int64(700_000), cal.Peak(onGPU(gpu0), at(0), at(16)))
	require.Equal(t, int64(2_300_000), cal.Peak(OfUser(1), at(5), at(6)), "a user's share across GPUs and hosts")
}

// randomGPU is one of four GPUs: two on this host, two on another.
func randomGPU(rng *rand.Rand) GpuID {
	return GpuID{Host: []string{"", "gpu3"}[rng.IntN(2)], Device: rng.IntN(2)}
}

// randomCalendar is up to 12 slots of three users on two hosts' GPUs, a
// quarter of them places kept for requests, each at least shortest
// seconds long.
func randomCalendar(rng *rand.Rand, shortest int) Calendar {
	var cal Calendar
	for range rng.IntN(12) {
		start := rng.IntN(60)
		s := slot{gpu: randomGPU(rng), uid: rng.IntN(3), share: int64(1+rng.IntN(10)) * 100_000,
			start: at(start), end: at(start + shortest + rng.IntN(40))}
		if rng.IntN(4) == 0 {
			s.request = uint64(1 + rng.IntN(5)) // a place kept for a request ahead
		}
		cal = append(cal, s)
	}
	return cal
}

// earliest gives the first instant a request fits, checked against every
// whole second before it on random calendars of two hosts' GPUs, kept
// places and quotas: no earlier second fits, and the one it names does.
func TestCalendarEarliestIsTheFirstFit(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 3000 {
		cal := randomCalendar(rng, 1)
		a := Ask{Gpu: randomGPU(rng), Uid: rng.IntN(3), Share: int64(1+rng.IntN(10)) * 100_000,
			Length: time.Duration(1+rng.IntN(20)) * time.Second, Limits: policy.Limits{Share: 1}}
		if rng.IntN(2) == 0 {
			a.Limits.UserGPUs = new(float64(1+rng.IntN(15)) / 10)
		}
		if rng.IntN(4) == 0 {
			a.Limits.UserHours, a.Limits.HoursWindow = new(float64(1+rng.IntN(40))/3600), time.Duration(10+rng.IntN(40))*time.Second
		}
		if a.never() != nil {
			continue
		}
		from := at(rng.IntN(30))
		got, why := newLayout(cal).earliest(a, from)
		require.False(t, got.IsZero(), "round %d: no fit found", round)
		require.Nil(t, cal.Check(a, got), "round %d: %v does not fit", round, got)
		require.Equal(t, got.Equal(from), why == nil, "round %d", round)
		// Under an hours quota, room comes as old use slides out of the
		// window: earliest finds it to within a second.
		var slack time.Duration
		if a.Limits.UserHours != nil {
			slack = time.Second
		}
		for s := from; s.Add(slack).Before(got); s = s.Add(time.Second) {
			require.NotNil(t, cal.Check(a, s), "round %d: %v fits, earlier than %v", round, s, got)
		}
	}
}

// onGPUOrKept matches g's slots, places kept for requests included: the
// sweep the layout's steps of all g holds are checked against.
func onGPUOrKept(g GpuID) func(slot) bool {
	return func(s slot) bool { return s.gpu == g }
}

// What a GPU or a user holds, as the steps laying out a line weighs it,
// agrees with the sweep over the whole calendar on random calendars and
// spans, and the first start with room is the first the sweep finds.
func TestStepsAgreeWithTheSweep(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 3000 {
		cal := randomCalendar(rng, 0) // some slots empty
		lay := newLayout(cal)
		g, uid := randomGPU(rng), rng.IntN(3)
		from := at(rng.IntN(70))
		to := from.Add(time.Duration(1+rng.IntN(30)) * time.Second)
		gt, ut := lay.gpu(g).lay(), lay.user(uid).lay()
		require.Equal(t, cal.Peak(onGPU(g), from, to), gt.booked.mostIn(from, to), "round %d", round)
		require.Equal(t, cal.Peak(onGPUOrKept(g), from, to), gt.all.mostIn(from, to), "round %d", round)
		require.Equal(t, cal.Peak(OfUser(uid), from, to), ut.all.mostIn(from, to), "round %d", round)

		length, limit := to.Sub(from), int64(rng.IntN(11))*100_000
		got, ok := gt.all.roomFrom(from, length, limit)
		require.True(t, ok, "round %d: every slot ends", round)
		require.LessOrEqual(t, cal.Peak(onGPUOrKept(g), got, got.Add(length)), limit, "round %d", round)
		for s := from; s.Before(got); s = s.Add(time.Second) {
			require.Greater(t, cal.Peak(onGPUOrKept(g), s, s.Add(length)), limit, "round %d: %v has room, earlier than %v", round, s, got)
		}
	}
}

// The hours quota frees as old use slides out of the window: the ETA is
// the second it does, not the next time a booking starts or ends.
func TestHoursQuotaFreesContinuously(t *testing.T) {
	t.Parallel()
	// 1 GPU-hour used from 0 to 3600; the limit is 1.5 GPU-hours a day.
	cal := Calendar{{gpu: GpuID{Device: 0}, uid: 1, share: human.Ppm, start: at(0), end: at(3600)}}
	a := Ask{Gpu: GpuID{Host: "gpu3", Device: 0}, Uid: 1, Share: human.Ppm, Length: time.Hour, Limits: policy.Limits{UserHours: new(1.5), HoursWindow: 24 * time.Hour, Share: 1}}
	got, why := newLayout(cal).earliest(a, at(3600))
	require.NotNil(t, why)
	require.Equal(t, blockedHours, why.kind)
	require.InDelta(t, 1.0, why.figure, 1e-9)
	// The window ending when it ends (got + 1h) may hold half an hour of
	// the old booking: the window starts at 1800, so got = 1800 + 24h - 1h.
	want := at(1800 + 24*3600 - 3600)
	require.WithinDuration(t, want, got, time.Second)
	require.NotNil(t, cal.Check(a, got.Add(-2*time.Second)))
}

// Asking more than a quota allows by itself can never be granted.
func TestNeverFits(t *testing.T) {
	t.Parallel()
	require.NotNil(t, Ask{Share: 600_000, Length: time.Hour, Limits: policy.Limits{UserGPUs: new(0.5)}}.never())
	require.NotNil(t, Ask{Share: human.Ppm, Length: 3 * time.Hour, Limits: policy.Limits{UserHours: new(2.0), HoursWindow: time.Hour}}.never())
	require.Nil(t, Ask{Share: human.Ppm, Length: 3 * time.Hour, Limits: policy.Limits{UserHours: new(2.0), Exempt: true}}.never())
	require.Nil(t, Ask{Share: 500_000, Length: time.Hour, Limits: policy.Limits{UserGPUs: new(0.5)}}.never())
}

// The hours check, a sweep over cumulative sums, agrees with summing every
// window by hand on random calendars.
func TestHoursPeakAgreesWithSummingByHand(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 3000 {
		var cal Calendar
		for range rng.IntN(10) {
			start := rng.IntN(100)
			cal = append(cal, slot{gpu: randomGPU(rng), uid: rng.IntN(2), share: int64(1+rng.IntN(10)) * 100_000,
				start: at(start), end: at(start + 1 + rng.IntN(30))})
		}
		w := time.Duration(5+rng.IntN(40)) * time.Second
		a := Ask{Gpu: GpuID{Device: 0}, Uid: 0, Share: int64(1+rng.IntN(10)) * 100_000, Length: time.Duration(1+rng.IntN(10)) * time.Second,
			Limits: policy.Limits{UserHours: new(float64(1+rng.IntN(40)) / 3600), HoursWindow: w, Share: 1}}
		start := at(rng.IntN(120))
		fresh := a.slots(start, 0)[0]
		fullest := -1.0
		olds := map[float64]bool{} // what the user had in each fullest window
		// The window ending at start stands for those ending a moment after,
		// which hold a sliver of the new slot.
		for s := start; !s.After(fresh.end.Add(w)); s = s.Add(time.Second) {
			old := cal.GpuSeconds(0, s.Add(-w), s)
			total := old + (Calendar{fresh}).GpuSeconds(0, s.Add(-w), s)
			if total > fullest+1e-9 {
				fullest, olds = total, map[float64]bool{}
			}
			if total > fullest-1e-9 {
				olds[math.Round(old*1e6)/1e6] = true
			}
		}
		got, over := cal.HoursPeak(a, start)
		require.Equal(t, fullest > *a.Limits.UserHours*3600+1e-6, over, "round %d", round)
		require.True(t, olds[math.Round(got*3600*1e6)/1e6], "round %d: %v GPU-hours before, not one of %v", round, got*3600, olds)
	}
}

// A track laid out at once holds what its slots added one by one hold:
// the same steps, at the same instants, whatever the slots' order, their
// shared starts and ends, and empty or zero-share slots among them.
func TestStepsLaidOutAtOnceMatchSlotsAddedOneByOne(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 24))
	for round := range 200 {
		var cal Calendar
		for range rng.IntN(40) {
			start := at(rng.IntN(30))
			s := slot{share: int64(rng.IntN(4)) * 250_000, start: start, end: start.Add(time.Duration(rng.IntN(20)) * time.Second)}
			if rng.IntN(3) == 0 {
				s.request = uint64(1 + rng.IntN(5))
			}
			cal = append(cal, s)
		}
		one := track{laid: true} // laid out (empty) first: each put adds to the steps
		for _, s := range cal {
			one.put(s)
		}
		t1 := trackOf(map[int]*track{}, 0, cal, func(slot) bool { return true }).lay()
		require.Equal(t, cal, t1.slots, "round %d", round)
		for _, pair := range [][2]steps{{one.all, t1.all}, {one.booked, t1.booked}} {
			require.Len(t, pair[1].at, len(pair[0].at), "round %d", round)
			for i := range pair[0].at {
				require.True(t, pair[0].at[i].Equal(pair[1].at[i]), "round %d, step %d", round, i)
			}
			require.Equal(t, pair[0].sum, pair[1].sum, "round %d", round)
		}
	}
}
