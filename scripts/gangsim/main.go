// Command gangsim runs a simulated week of a lab's GPU jobs — 1-, 2-, 4-
// and 8-GPU jobs of six users on one 8-GPU box — through Chronos's real
// admission code (the waiting line's plan, admission.Books.Plan, on books
// held in memory, on simulated time: no clock, no ledger) and through two
// baselines, and prints issue 23's figures: how long 8-GPU jobs wait
// against a reservation-only schedule (strict order, no backfill), GPU
// utilisation against first-fit (no reservations), and each user's GPU
// time against their max-min fair share (Jain's index).
//
//	go run ./scripts/gangsim                 # one week, seed 1
//	go run ./scripts/gangsim -weeks 10       # ten weeks, seeds 1–10, and the worst of them
package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/chronos-gpu/chronos/core/policy"
)

type config struct {
	seed  uint64
	weeks int
	span  time.Duration
	gpus  int
	every time.Duration
	// The policy's fair-share knobs (the default policy's unless set).
	halfLife  time.Duration
	ageWeight float64
	maxAge    time.Duration
}

func main() {
	var c config
	flag.Uint64Var(&c.seed, "seed", 1, "the first week's seed; week i uses seed+i")
	flag.IntVar(&c.weeks, "weeks", 1, "how many weeks (traces) to simulate")
	flag.DurationVar(&c.span, "span", 7*24*time.Hour, "how long jobs arrive for, and the window measured")
	flag.IntVar(&c.gpus, "gpus", 8, "the box's GPUs")
	flag.DurationVar(&c.every, "every", 5*time.Minute, "how often waiters lay the line out again between events")
	pol := policy.Default()
	flag.DurationVar(&c.halfLife, "half-life", pol.HalfLife, "the policy's half-life of usage (chronos policy set half-life=)")
	flag.Float64Var(&c.ageWeight, "age-weight", pol.AgeWeight, "the policy's weight of time waited (age-weight=)")
	flag.DurationVar(&c.maxAge, "max-age", pol.MaxAge, "the wait at which the age weight is reached (max-age=)")
	flag.Parse()
	if c.weeks < 1 || c.gpus < 8 || c.span <= 0 || c.every < 0 || c.halfLife <= 0 || c.ageWeight < 0 || c.maxAge < 0 {
		fmt.Fprintln(os.Stderr, "gangsim: -weeks ≥ 1, -gpus ≥ 8 (the trace has 8-GPU jobs), -span > 0, -every ≥ 0, -half-life > 0, -age-weight ≥ 0 and -max-age ≥ 0")
		os.Exit(2)
	}
	if err := run(os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "gangsim:", err)
		os.Exit(1)
	}
}

// week is one trace's figures under the three schedules.
type week struct {
	seed             uint64
	jobs             int
	load             float64 // GPUs the trace's jobs ran, over the span
	ours, resv, ff   figures
	plans, maxQueue  int
	planned, longest time.Duration
}

// simulateWeek runs one trace through the three schedules.
func simulateWeek(c config, seed uint64) (week, error) {
	tr := trace(lab, c.span, seed)
	w := week{seed: seed, jobs: len(tr), load: load(tr, c.span)}
	fl := newFairLine(lab, c.gpus)
	fl.pol.HalfLife, fl.pol.AgeWeight, fl.pol.MaxAge = cmp.Or(c.halfLife, fl.pol.HalfLife), c.ageWeight, c.maxAge
	ours, err := simulate(fl, tr, c.gpus, c.every)
	if err != nil {
		return w, err
	}
	resv, err := simulate(&reservationOnly{queue{free: c.gpus}}, tr, c.gpus, 0)
	if err != nil {
		return w, err
	}
	ff, err := simulate(&firstFit{queue{free: c.gpus}}, tr, c.gpus, 0)
	if err != nil {
		return w, err
	}
	w.ours = measure("chronos", ours, lab, c.gpus, c.span)
	w.resv = measure("reservation-only", resv, lab, c.gpus, c.span)
	w.ff = measure("first-fit", ff, lab, c.gpus, c.span)
	w.plans, w.maxQueue, w.planned, w.longest = fl.plans, fl.maxQueue, fl.planned, fl.longest
	return w, nil
}

func run(out io.Writer, c config) error {
	fmt.Fprintf(out, "gangsim: %d GPUs, jobs arriving for %v, offered %.2f GPUs on average (%.0f%% of the box), re-planned every %v between events; half-life %v, age weight %g, max age %v\n\n",
		c.gpus, c.span, offered(lab), 100*offered(lab)/float64(c.gpus), c.every, c.halfLife, c.ageWeight, c.maxAge)
	var worst struct{ wait, util, jain float64 }
	worst.util, worst.jain = math.Inf(1), 1
	var met [3]int // weeks that met each target
	for i := range c.weeks {
		w, err := simulateWeek(c, c.seed+uint64(i))
		if err != nil {
			return fmt.Errorf("seed %d: %w", c.seed+uint64(i), err)
		}
		if i == 0 {
			details(out, w)
		}
		wait := ratio(w.ours.maxWait[8], w.resv.maxWait[8])
		util := w.ours.utilisation / w.ff.utilisation
		fmt.Fprintf(out, "seed %d: %d jobs, load %.0f%%; 8-GPU max wait %v vs %v reservation-only (%.2f×); utilisation %.1f%% vs %.1f%% first-fit (%.3f); Jain %.3f (first-fit %.3f, reservation-only %.3f)\n",
			w.seed, w.jobs, 100*w.load/float64(c.gpus), hours(w.ours.maxWait[8]), hours(w.resv.maxWait[8]), wait, 100*w.ours.utilisation, 100*w.ff.utilisation, util,
			w.ours.jain, w.ff.jain, w.resv.jain)
		worst.wait, worst.util, worst.jain = max(worst.wait, wait), min(worst.util, util), min(worst.jain, w.ours.jain)
		for k, ok := range []bool{wait <= 2, util >= 0.95, w.ours.jain >= 0.95} {
			if ok {
				met[k]++
			}
		}
	}
	fmt.Fprintf(out, "\nover %d week(s), the worst: 8-GPU max wait %.2f× reservation-only's (target ≤ 2: %s in %d); utilisation %.3f× first-fit's (target ≥ 0.95: %s in %d); Jain %.3f (target ≥ 0.95: %s in %d)\n",
		c.weeks, worst.wait, verdict(worst.wait <= 2), met[0], worst.util, verdict(worst.util >= 0.95), met[1], worst.jain, verdict(worst.jain >= 0.95), met[2])
	return nil
}

// details prints one week's figures in full.
func details(out io.Writer, w week) {
	fmt.Fprintf(out, "seed %d: %d jobs; chronos made %d plans (mean %v, longest %v real time), its line at most %d long\n\n",
		w.seed, w.jobs, w.plans, (w.planned / time.Duration(max(w.plans, 1))).Round(time.Microsecond), w.longest.Round(time.Microsecond), w.maxQueue)
	fmt.Fprintln(out, "| schedule | utilisation | wait p50 / max: 1 GPU | 2 GPUs | 4 GPUs | 8 GPUs | Jain |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	for _, f := range []figures{w.ours, w.resv, w.ff} {
		var cells []string
		for _, n := range []int{1, 2, 4, 8} {
			cells = append(cells, hours(f.p50Wait[n])+" / "+hours(f.maxWait[n]))
		}
		fmt.Fprintf(out, "| %s | %.1f%% | %s | %.3f |\n", f.name, 100*f.utilisation, strings.Join(cells, " | "), f.jain)
	}
	fmt.Fprintln(out, "\n| user | jobs (GPUs) | GPU-hours: chronos | fair share | ratio | reservation-only | first-fit |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	for i, u := range lab {
		var sizes []string
		for _, c := range u.classes {
			sizes = append(sizes, fmt.Sprint(c.gpus))
		}
		fmt.Fprintf(out, "| %s | %s | %.0f | %.0f | %.2f | %.0f (%.2f) | %.0f (%.2f) |\n", u.name, strings.Join(sizes, ", "),
			w.ours.gpuTime[i]/3600, w.ours.fair[i]/3600, w.ours.gpuTime[i]/w.ours.fair[i],
			w.resv.gpuTime[i]/3600, w.resv.gpuTime[i]/w.resv.fair[i], w.ff.gpuTime[i]/3600, w.ff.gpuTime[i]/w.ff.fair[i])
	}
	if j := w.ours.longest8; j.id != 0 {
		fmt.Fprintf(out, "the 8-GPU job that waited longest under chronos: %s's, arrived at %s, waited %s\n", lab[j.user].name, hours(j.arrive), hours(j.start-j.arrive))
	}
	fmt.Fprintln(out)
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		if a == 0 {
			return 1
		}
		return float64(a) // no baseline wait: any wait is that many times
	}
	return float64(a) / float64(b)
}

func hours(d time.Duration) string { return fmt.Sprintf("%.1fh", d.Hours()) }

// verdict says whether a target was met in every week, and met in n
// weeks says in how many.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met; met"
}
