package main

import (
	"math"
	"slices"
	"time"
)

// figures are what one schedule made of a trace, over the window it was
// measured in (the trace's span: jobs that end after it count up to its
// end).
type figures struct {
	name        string
	utilisation float64               // busy GPU time ÷ the box's, in the window
	maxWait     map[int]time.Duration // by GPUs asked
	p50Wait     map[int]time.Duration
	gpuTime     []float64 // each user's GPU-seconds in the window
	fair        []float64 // each user's max-min fair share of them
	jain        float64   // Jain's index of gpuTime ÷ fair
	longest8    job       // the 8-GPU job that waited longest
}

// measure is jobs' figures for users on a box of gpus over [0, window).
func measure(name string, jobs []job, users []user, gpus int, window time.Duration) figures {
	f := figures{name: name, maxWait: map[int]time.Duration{}, p50Wait: map[int]time.Duration{}, gpuTime: make([]float64, len(users))}
	waits := map[int][]time.Duration{}
	demand := make([]float64, len(users))
	var busy float64
	for _, j := range jobs {
		w := j.start - j.arrive
		waits[j.gpus] = append(waits[j.gpus], w)
		if w >= f.maxWait[j.gpus] {
			f.maxWait[j.gpus] = w
			if j.gpus == 8 {
				f.longest8 = j
			}
		}
		held := float64(j.gpus) * overlap(j.start, j.end, window).Seconds()
		busy += held
		f.gpuTime[j.user] += held
		if j.arrive < window {
			// What the job could have run in the window, had it started
			// as it arrived.
			demand[j.user] += float64(j.gpus) * min(j.runs, window-j.arrive).Seconds()
		}
	}
	for n, ws := range waits {
		slices.Sort(ws)
		f.p50Wait[n] = ws[len(ws)/2]
	}
	f.utilisation = busy / (float64(gpus) * window.Seconds())
	f.fair = maxMinShares(demand, busy)
	ratios := make([]float64, len(users))
	for i := range ratios {
		ratios[i] = 1
		if f.fair[i] > 0 {
			ratios[i] = f.gpuTime[i] / f.fair[i]
		}
	}
	f.jain = jain(ratios)
	return f
}

// load is the GPU time jobs arriving in [0, window) run, in GPUs over
// the window: the load the trace offers the box.
func load(jobs []job, window time.Duration) float64 {
	var sum float64
	for _, j := range jobs {
		if j.arrive < window {
			sum += float64(j.gpus) * j.runs.Seconds()
		}
	}
	return sum / window.Seconds()
}

// overlap is how much of [start, end) lies in [0, window).
func overlap(start, end, window time.Duration) time.Duration {
	return max(0, min(end, window)-max(start, 0))
}

// maxMinShares splits capacity among users by max-min fairness (water
// filling, equal weights): nobody gets more than they asked, and what a
// user does not ask for is shared equally by those who ask for more.
func maxMinShares(demand []float64, capacity float64) []float64 {
	share := make([]float64, len(demand))
	left := slices.Clone(demand)
	for capacity > 1e-9 {
		var want []int
		for i, d := range left {
			if d > 1e-9 {
				want = append(want, i)
			}
		}
		if len(want) == 0 {
			break
		}
		each := capacity / float64(len(want))
		for _, i := range want {
			give := math.Min(each, left[i])
			share[i] += give
			left[i] -= give
			capacity -= give
		}
	}
	return share
}

// jain is Jain's fairness index of x: 1 when all are equal, 1/n when one
// has everything.
func jain(x []float64) float64 {
	var sum, squares float64
	for _, v := range x {
		sum += v
		squares += v * v
	}
	if squares == 0 {
		return 1
	}
	return sum * sum / (float64(len(x)) * squares)
}
