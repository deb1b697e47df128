package main

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// schedule decides which waiting jobs start, told of every arrival and
// every end, on simulated time: instants since the trace began.
type schedule interface {
	name() string
	arrive(j *job, now time.Duration)
	release(j *job, now time.Duration) error
	// start is the waiting jobs that start at now, with their GPUs when
	// the schedule places them.
	start(now time.Duration) ([]*job, error)
}

// errStuck: jobs wait, nothing runs, nothing is left to arrive, and the
// schedule starts none of them.
var errStuck = errors.New("stuck")

// simulate runs jobs (a trace, copied) through s on a box of gpus whole
// GPUs until every job has ended, event by event: at each instant where
// jobs end or arrive (and, with every set, that long after the schedule
// last looked, while jobs wait) the ended jobs release, the arrivals
// join, then s says what starts. It checks that never more GPUs are busy
// than the box has, nor one GPU twice, and returns the jobs as run.
func simulate(s schedule, trace []job, gpus int, every time.Duration) ([]job, error) {
	jobs := slices.Clone(trace)
	var running []*job
	waiting, next, done := 0, 0, 0
	var looked time.Duration
	onGPU := make([]int, gpus) // the job on each GPU, 0: none
	for done < len(jobs) {
		now, ok := time.Duration(0), false
		soonest := func(t time.Duration) {
			if !ok || t < now {
				now, ok = t, true
			}
		}
		if next < len(jobs) {
			soonest(jobs[next].arrive)
		}
		for _, j := range running {
			soonest(j.end)
		}
		if waiting > 0 && every > 0 {
			soonest(looked + every)
		}
		if !ok {
			return jobs, fmt.Errorf("%s: %w: %d waiting", s.name(), errStuck, waiting)
		}
		for _, j := range slices.Clone(running) {
			if j.end > now {
				continue
			}
			if err := s.release(j, now); err != nil {
				return jobs, err
			}
			running = slices.DeleteFunc(running, func(r *job) bool { return r == j })
			for _, d := range j.devices {
				onGPU[d] = 0
			}
			done++
		}
		for ; next < len(jobs) && jobs[next].arrive <= now; next++ {
			s.arrive(&jobs[next], now)
			waiting++
		}
		started, err := s.start(now)
		if err != nil {
			return jobs, err
		}
		looked = now
		for _, j := range started {
			if j.started {
				return jobs, fmt.Errorf("%s: job %d started twice", s.name(), j.id)
			}
			j.start, j.end, j.started = now, now+j.runs, true
			running = append(running, j)
			waiting--
			for _, d := range j.devices {
				if onGPU[d] != 0 {
					return jobs, fmt.Errorf("%s: job %d started on GPU %d, which job %d holds", s.name(), j.id, d, onGPU[d])
				}
				onGPU[d] = j.id
			}
		}
		busy := 0
		for _, j := range running {
			busy += j.gpus
		}
		if busy > gpus {
			return jobs, fmt.Errorf("%s: %d GPUs busy at %v, of %d", s.name(), busy, now, gpus)
		}
		if len(running) == 0 && waiting > 0 && next == len(jobs) {
			return jobs, fmt.Errorf("%s: %w: %d waiting", s.name(), errStuck, waiting)
		}
	}
	return jobs, nil
}

// queue is the baselines' line, in order of arrival, and the box's free
// GPUs.
type queue struct {
	waiting []*job
	free    int
}

func (q *queue) arrive(j *job, _ time.Duration) { q.waiting = append(q.waiting, j) }

// release frees j's GPUs. It never fails; Chronos's release does when a
// job ends without a booking.
//
//nolint:unparam // the schedule interface's signature
func (q *queue) release(j *job, _ time.Duration) error {
	q.free += j.gpus
	return nil
}

// reservationOnly starts jobs strictly in order of arrival: the first
// waiting job starts once enough GPUs are free, and nothing behind it
// starts before it (no backfill).
type reservationOnly struct{ queue }

func (*reservationOnly) name() string { return "reservation-only" }

func (q *reservationOnly) start(time.Duration) ([]*job, error) {
	var out []*job
	for len(q.waiting) > 0 && q.waiting[0].gpus <= q.free {
		out = append(out, q.waiting[0])
		q.free -= q.waiting[0].gpus
		q.waiting = q.waiting[1:]
	}
	return out, nil
}

// firstFit starts, in order of arrival, every waiting job that fits now:
// no reservations, so a big job waits until enough GPUs happen to be free
// together.
type firstFit struct{ queue }

func (*firstFit) name() string { return "first-fit" }

func (q *firstFit) start(time.Duration) ([]*job, error) {
	var out []*job
	q.waiting = slices.DeleteFunc(q.waiting, func(j *job) bool {
		if j.gpus > q.free {
			return false
		}
		q.free -= j.gpus
		out = append(out, j)
		return true
	})
	return out, nil
}
