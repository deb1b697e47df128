package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chronos-gpu/chronos/storage"
)

// checker reads the ledger in View transactions, over and over, and holds
// the invariants at each instant it sees: no device more than 100% booked,
// no booking still stored as live a grace period past its deadline, no
// booking ended twice.
type checker struct {
	l     storage.Store
	grace time.Duration
	views atomic.Int64
	lat   Hist

	mu         sync.Mutex
	maxPPM     map[int]int64
	overbooked []string
	late       map[uint64]bool
	lateMsgs   []string
	lastSeq    uint64
	ends       map[uint64]int
	doubleEnds []string
	errs       []string
}

func newChecker(l storage.Store, grace time.Duration) *checker {
	return &checker{l: l, grace: grace, maxPPM: map[int]int64{}, late: map[uint64]bool{}, ends: map[uint64]int{}}
}

func (c *checker) violations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.overbooked) + len(c.lateMsgs) + len(c.doubleEnds) + len(c.errs)
}

func (c *checker) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		c.once()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func note(list *[]string, msg string) {
	if len(*list) < keepFailures {
		*list = append(*list, msg)
	} else if len(*list) == keepFailures {
		*list = append(*list, "…")
	}
}

func (c *checker) once() {
	t0 := time.Now()
	var live []storage.Partition
	var evs []storage.Event
	var now time.Time
	err := c.l.View(func(tx *storage.Tx) error {
		var err error
		if live, err = tx.LivePartitions(); err != nil {
			return err
		}
		// An instant after the transaction's first read: what it reads
		// was so then (a file is locked at the start; etcd pins the
		// revision of the first read), and every booking it holds was
		// admitted before, so none that ended by now is counted.
		now = time.Now()
		evs, err = tx.Events(c.lastSeq, 0)
		return err
	})
	c.lat.Add(time.Since(t0))
	c.views.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		note(&c.errs, "checker read: "+err.Error())
		return
	}
	sum := map[int]int64{}
	for _, p := range live {
		if p.LiveAt(now) {
			sum[p.Device] += p.SharePPM
		} else if now.Sub(p.Expires) > c.grace && !c.late[p.ID] {
			c.late[p.ID] = true
			note(&c.lateMsgs, fmt.Sprintf("booking %d still live %s after its deadline", p.ID, now.Sub(p.Expires).Round(time.Millisecond)))
		}
	}
	for dev, ppm := range sum {
		c.maxPPM[dev] = max(c.maxPPM[dev], ppm)
		if ppm > 1_000_000 {
			note(&c.overbooked, fmt.Sprintf("GPU %d booked %.4f%% at %s", dev, float64(ppm)/1e4, now.Format(time.RFC3339Nano)))
		}
	}
	for _, e := range evs {
		c.lastSeq = e.Seq
		if e.Kind == "released" || e.Kind == "expired" {
			c.ends[e.Partition]++
			if c.ends[e.Partition] == 2 {
				note(&c.doubleEnds, fmt.Sprintf("booking %d ended twice (second: %s by %s)", e.Partition, e.Kind, e.User))
			}
		}
	}
}

// finalCheck is the whole ledger, read once at the end.
type finalCheck struct {
	partitions, released, expired, stillLive int
	events                                   int
	missingCreated, doubleCreated            []string
	missingEnd, doubleEnd, wrongEnd          []string
	expiryLateness                           Hist // deadline -> the expired event
	err                                      string
}

func (c *checker) final() finalCheck {
	var f finalCheck
	err := c.l.View(func(tx *storage.Tx) error {
		parts, err := tx.Partitions()
		if err != nil {
			return err
		}
		evs, err := tx.Events(0, 0)
		if err != nil {
			return err
		}
		f.partitions, f.events = len(parts), len(evs)
		created := map[uint64]int{}
		ends := map[uint64][]storage.Event{}
		for _, e := range evs {
			switch e.Kind {
			case "created":
				created[e.Partition]++
			case "released", "expired":
				ends[e.Partition] = append(ends[e.Partition], e)
			}
		}
		for _, p := range parts {
			switch created[p.ID] {
			case 1:
			case 0:
				note(&f.missingCreated, fmt.Sprintf("booking %d", p.ID))
			default:
				note(&f.doubleCreated, fmt.Sprintf("booking %d: %d created events", p.ID, created[p.ID]))
			}
			switch p.State {
			case storage.Released:
				f.released++
			case storage.Expired:
				f.expired++
			default:
				f.stillLive++
			}
			e := ends[p.ID]
			switch {
			case len(e) == 0 && p.State != storage.Live:
				note(&f.missingEnd, fmt.Sprintf("booking %d is %s with no event", p.ID, p.State))
			case len(e) == 0:
				note(&f.missingEnd, fmt.Sprintf("booking %d never ended (deadline %s ago)", p.ID, time.Since(p.Expires).Round(time.Millisecond)))
			case len(e) > 1:
				note(&f.doubleEnd, fmt.Sprintf("booking %d: %d end events", p.ID, len(e)))
			case string(p.State) != string(e[0].Kind):
				note(&f.wrongEnd, fmt.Sprintf("booking %d is %s, its event says %s", p.ID, p.State, e[0].Kind))
			}
			if len(e) == 1 && e[0].Kind == "expired" {
				f.expiryLateness.Add(e[0].Time.Sub(p.Expires))
			}
		}
		return nil
	})
	if err != nil {
		f.err = err.Error()
	}
	return f
}
