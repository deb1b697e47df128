package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// class is one kind of job a user submits: how many whole GPUs, how
// often (a Poisson process), and how long it is booked for (log-uniform
// between the two lengths).
type class struct {
	gpus           int
	perHour        float64
	minLen, maxLen time.Duration
}

// user is one member of the lab and the jobs they submit.
type user struct {
	name    string
	uid     int
	classes []class
}

// The lengths booked, by size: a quick 1-GPU run to a day's training.
var (
	small = [2]time.Duration{30 * time.Minute, 8 * time.Hour}
	mid   = [2]time.Duration{time.Hour, 12 * time.Hour}
	big   = [2]time.Duration{2 * time.Hour, 12 * time.Hour}
)

// lab is the trace's six users on one 8-GPU box (BENCHMARKS.md states
// it): two who run only 1-GPU jobs, one who adds 2-GPU jobs, one 4-GPU
// training, one 8-GPU training, and one who runs 2-, 4- and 8-GPU jobs.
// Offered, with runs of 75% of the booked length on average, about 108%
// of the box: a line forms and stays, as in a busy lab.
var lab = []user{
	{"ana", 2001, []class{{1, 0.55, small[0], small[1]}}},
	{"ben", 2002, []class{{1, 0.40, small[0], small[1]}, {2, 0.10, mid[0], mid[1]}}},
	{"chen", 2003, []class{{1, 0.20, small[0], small[1]}, {4, 0.07, mid[0], mid[1]}}},
	{"dana", 2004, []class{{1, 0.20, small[0], small[1]}, {8, 0.025, big[0], big[1]}}},
	{"eli", 2005, []class{{2, 0.12, mid[0], mid[1]}, {4, 0.07, mid[0], mid[1]}, {8, 0.025, big[0], big[1]}}},
	{"fay", 2006, []class{{1, 0.45, small[0], small[1]}}},
}

// job is one job of the trace, and what a schedule made of it.
type job struct {
	id     int
	user   int // index in the users
	gpus   int
	booked time.Duration // what it asks for
	runs   time.Duration // what it runs: it ends (and releases) then
	arrive time.Duration // since the trace began

	start, end time.Duration // set by a schedule; started says whether
	started    bool
	devices    []int // the GPUs it ran on, where the schedule says
}

// runFraction is what part of its booked length a job runs: between half
// and all of it, uniformly (people book a margin and jobs end early).
func runFraction(rng *rand.Rand) float64 { return 0.5 + 0.5*rng.Float64() }

// trace is span's arrivals of users' jobs, oldest first, from seed.
func trace(users []user, span time.Duration, seed uint64) []job {
	rng := rand.New(rand.NewPCG(seed, 23))
	var jobs []job
	for u, us := range users {
		for _, c := range us.classes {
			mean := time.Duration(float64(time.Hour) / c.perHour)
			for at := expDuration(rng, mean); at < span; at += expDuration(rng, mean) {
				booked := logUniform(rng, c.minLen, c.maxLen).Round(time.Minute)
				jobs = append(jobs, job{user: u, gpus: c.gpus, booked: booked,
					runs: time.Duration(float64(booked) * runFraction(rng)).Round(time.Second), arrive: at.Round(time.Second)})
			}
		}
	}
	slices.SortStableFunc(jobs, func(a, b job) int { return int(a.arrive - b.arrive) })
	for i := range jobs {
		jobs[i].id = i + 1
	}
	return jobs
}

func expDuration(rng *rand.Rand, mean time.Duration) time.Duration {
	return time.Duration(rng.ExpFloat64() * float64(mean))
}

func logUniform(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	l, h := math.Log(float64(lo)), math.Log(float64(hi))
	return time.Duration(math.Exp(l + rng.Float64()*(h-l)))
}

// offered is the GPU time the users' classes ask for per hour, on
// average, in GPUs: runs of 75% of the booked length, whose log-uniform
// mean is (max − min) / ln(max / min).
func offered(users []user) float64 {
	var sum float64
	for _, u := range users {
		for _, c := range u.classes {
			mean := (c.maxLen - c.minLen).Hours() / math.Log(float64(c.maxLen)/float64(c.minLen))
			sum += c.perHour * float64(c.gpus) * mean * 0.75
		}
	}
	return sum
}
