package main

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Each schedule does what it is defined to do, on a trace made by hand:
// A holds 7 of the 8 GPUs for 10 h; then come B for all 8 (1 h), C for
// one GPU for 20 h, D for one for 5 h. Reservation-only starts nothing
// behind B before it; first-fit starts C at once, and B only when A and
// C have both ended; Chronos's line keeps B's place at 10 h on all eight
// GPUs, so C (which would run into it) waits until B has run, while D,
// which ends before, uses the free GPU now.
func TestSchedulesOnAHandMadeTrace(t *testing.T) {
	t.Parallel()
	h := time.Hour
	tr := []job{
		{id: 1, user: 0, gpus: 7, booked: 10 * h, runs: 10 * h},
		{id: 2, user: 1, gpus: 8, booked: h, runs: h, arrive: time.Minute},
		{id: 3, user: 2, gpus: 1, booked: 20 * h, runs: 20 * h, arrive: 2 * time.Minute},
		{id: 4, user: 3, gpus: 1, booked: 5 * h, runs: 5 * h, arrive: 3 * time.Minute},
	}
	starts := func(s schedule, every time.Duration) []time.Duration {
		t.Helper()
		jobs, err := simulate(s, tr, 8, every)
		require.NoError(t, err)
		var out []time.Duration
		for _, j := range jobs {
			require.True(t, j.started)
			out = append(out, j.start)
		}
		return out
	}
	require.Equal(t, []time.Duration{0, 10 * h, 11 * h, 11 * h}, starts(&reservationOnly{queue{free: 8}}, 0))
	require.Equal(t, []time.Duration{0, 20*h + 2*time.Minute, 2 * time.Minute, 10 * h}, starts(&firstFit{queue{free: 8}}, 0))
	fl := newFairLine(lab, 8)
	require.Equal(t, []time.Duration{0, 10 * h, 11 * h, 3 * time.Minute}, starts(fl, 5*time.Minute))
	require.Positive(t, fl.plans)
}

// A day of the lab's trace runs through the three schedules: every job
// starts once, no sooner than it arrived, and simulate's checks (never
// more GPUs busy than the box has, no GPU held by two of Chronos's
// bookings) hold throughout.
func TestADayOfTheTrace(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	tr := trace(lab, day, 3)
	require.Greater(t, len(tr), 30)
	for _, s := range []schedule{newFairLine(lab, 8), &reservationOnly{queue{free: 8}}, &firstFit{queue{free: 8}}} {
		jobs, err := simulate(s, tr, 8, 5*time.Minute)
		require.NoError(t, err, s.name())
		for _, j := range jobs {
			require.True(t, j.started, "%s: job %d", s.name(), j.id)
			require.GreaterOrEqual(t, j.start, j.arrive, "%s: job %d", s.name(), j.id)
			require.Equal(t, j.start+j.runs, j.end)
			if s.name() == "chronos" {
				require.Len(t, j.devices, j.gpus)
			}
		}
		f := measure(s.name(), jobs, lab, 8, day)
		require.InDelta(t, 0.5, f.utilisation, 0.5, s.name())
		var held float64
		for _, g := range f.gpuTime {
			held += g
		}
		require.InDelta(t, f.utilisation*8*day.Seconds(), held, 1, "every GPU-second busy is some user's")
	}
}

func TestMaxMinSharesAndJain(t *testing.T) {
	t.Parallel()
	require.Equal(t, []float64{1, 4, 4}, maxMinShares([]float64{1, 5, 10}, 9))
	require.Equal(t, []float64{1, 2, 3}, maxMinShares([]float64{1, 2, 3}, 100), "nobody gets more than they asked")
	require.InDelta(t, 1, jain([]float64{2, 2, 2}), 1e-12)
	require.InDelta(t, 1.0/3, jain([]float64{1, 0, 0}), 1e-12)
	require.InDelta(t, 0.8, jain([]float64{1, 1, 1, 1, 0}), 1e-12)
}

// The trace is the seed's: the same seed the same jobs, another seed
// others; over many weeks every class appears and the load it offers is
// what offered() (and BENCHMARKS.md) says.
func TestTraceIsSeededAndOffersItsLoad(t *testing.T) {
	t.Parallel()
	week := 7 * 24 * time.Hour
	require.Equal(t, trace(lab, week, 5), trace(lab, week, 5))
	require.NotEqual(t, trace(lab, week, 5), trace(lab, week, 6))
	long := 52 * week
	tr := trace(lab, long, 1)
	seen := map[[2]int]bool{}
	for _, j := range tr {
		seen[[2]int{j.user, j.gpus}] = true
		require.GreaterOrEqual(t, j.runs, j.booked/2)
		require.LessOrEqual(t, j.runs, j.booked)
	}
	classes := 0
	for _, u := range lab {
		classes += len(u.classes)
	}
	require.Len(t, seen, classes)
	require.InDelta(t, offered(lab), load(tr, long), 0.03*offered(lab))
	require.Less(t, math.Abs(offered(lab)/8-1.08), 0.01, "BENCHMARKS.md states 108%")
}
