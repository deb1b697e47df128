package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Outcomes of one operation. Overbooked and ended are answers the ledger is
// right to give under contention; busy and failed are failures.
const (
	outOK         = "ok"
	outOverbooked = "overbooked"
	outEnded      = "ended" // extend or release of a booking that expired meanwhile
	outBusy       = "busy"
	outFailed     = "failed"
	outQuota      = "quota" // refused by a quota: an answer
	outLeft       = "left"  // a waiting request timed out in line: an answer
)

// histBase is the ratio between neighbouring latency buckets: percentiles
// are exact to 2%.
const histBase = 1.02

const histBuckets = 1000 // 1 µs .. beyond an hour

// Hist is a latency histogram that merges across processes by addition.
type Hist struct {
	Counts []int64 `json:"counts"`
	N      int64   `json:"n"`
	Max    int64   `json:"max_us"`
	Sum    int64   `json:"sum_us"`
}

func bucketOf(us int64) int {
	if us < 1 {
		return 0
	}
	return min(histBuckets-1, int(math.Log(float64(us))/math.Log(histBase))+1)
}

func (h *Hist) Add(d time.Duration) {
	if h.Counts == nil {
		h.Counts = make([]int64, histBuckets)
	}
	us := d.Microseconds()
	h.Counts[bucketOf(us)]++
	h.N++
	h.Sum += us
	h.Max = max(h.Max, us)
}

func (h *Hist) Merge(o *Hist) {
	if o == nil || o.N == 0 {
		return
	}
	if h.Counts == nil {
		h.Counts = make([]int64, histBuckets)
	}
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
	h.N += o.N
	h.Sum += o.Sum
	h.Max = max(h.Max, o.Max)
}

// Quantile is the upper edge of the bucket holding quantile q.
func (h *Hist) Quantile(q float64) time.Duration {
	if h.N == 0 {
		return 0
	}
	want := int64(math.Ceil(q * float64(h.N)))
	var seen int64
	for i, c := range h.Counts {
		seen += c
		if seen >= want {
			if i == 0 {
				return time.Microsecond
			}
			us := min(float64(h.Max), math.Pow(histBase, float64(i)))
			return time.Duration(us * float64(time.Microsecond))
		}
	}
	return time.Duration(h.Max) * time.Microsecond
}

// Tally counts the operations of one process by kind and outcome.
type Tally struct {
	mu       sync.Mutex
	Ops      map[string]map[string]int64 `json:"ops"` // kind -> outcome -> n
	Lat      map[string]*Hist            `json:"lat"` // kind -> latency of every attempt
	Failures []string                    `json:"failures"`
	Procs    []ProcFigures               `json:"procs,omitempty"`
}

func newTally() *Tally {
	return &Tally{Ops: map[string]map[string]int64{}, Lat: map[string]*Hist{}}
}

const keepFailures = 20

func (t *Tally) Add(kind, outcome string, d time.Duration, failure string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Ops[kind] == nil {
		t.Ops[kind] = map[string]int64{}
		t.Lat[kind] = &Hist{}
	}
	t.Ops[kind][outcome]++
	t.Lat[kind].Add(d)
	if failure != "" && len(t.Failures) < keepFailures {
		t.Failures = append(t.Failures, kind+": "+failure)
	}
}

func (t *Tally) Merge(o *Tally) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for kind, outs := range o.Ops {
		if t.Ops[kind] == nil {
			t.Ops[kind] = map[string]int64{}
			t.Lat[kind] = &Hist{}
		}
		for out, n := range outs {
			t.Ops[kind][out] += n
		}
		t.Lat[kind].Merge(o.Lat[kind])
	}
	for _, f := range o.Failures {
		if len(t.Failures) < keepFailures {
			t.Failures = append(t.Failures, f)
		}
	}
	t.Procs = append(t.Procs, o.Procs...)
}

// Total is the number of operations of kinds matching keep.
func (t *Tally) Total(keep func(kind string) bool) (n, failed int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for kind, outs := range t.Ops {
		if !keep(kind) {
			continue
		}
		for out, c := range outs {
			n += c
			if out == outBusy || out == outFailed {
				failed += c
			}
		}
	}
	return n, failed
}

func (t *Tally) kinds() []string {
	var ks []string
	for k := range t.Ops {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int { return cmp.Compare(a, b) })
	return ks
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Second:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return d.Round(time.Second).String()
	}
}
