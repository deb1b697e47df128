package main

import (
	"context"
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// finalCheck is the whole ledger, read once at the end.
type finalCheck struct {
	partitions, released, expired, stillLive int
	events                                   int
	missingCreated, doubleCreated            []string
	missingEnd, doubleEnd, wrongEnd          []string
	expiryLateness                           Hist // deadline -> the expired event
	requests, granted, timedOut, cancelled   int
	badGrants                                []string // a request granted twice, or a booking for none
	// Over the whole history: each GPU's most booked instant, the
	// stretches over 100%; bookings not held whole, requests granted
	// other GPUs than they asked; and the gangs among them.
	held       map[gpuKey]peak
	overbooked []string
	flaws      []string
	misgranted []string
	gangs      gangFinal
	err        string
}

//nolint:funlen,gocyclo // the soak's final checks, one after the other, each reported
func (c *checker) final() finalCheck {
	var f finalCheck
	err := c.l.View(context.Background(), func(tx *storage.Tx) error {
		parts, err := tx.Partitions()
		if err != nil {
			return err
		}
		evs, err := tx.Events(0, 0)
		if err != nil {
			return err
		}
		f.partitions, f.events = len(parts), len(evs)
		f.held, f.overbooked = sweep(parts)
		invs, err := inventories(tx)
		if err != nil {
			return err
		}
		f.gangs.bySize = map[int]int{}
		created := map[uint64]int{}
		ends := map[uint64][]domain.Event{}
		for _, e := range evs {
			switch e.Kind {
			case "created":
				created[e.Partition]++
			case "released", "expired":
				ends[e.Partition] = append(ends[e.Partition], e)
			}
		}
		for _, p := range parts {
			for _, fl := range bookingFlaws(p, invs) {
				note(&f.flaws, fl)
			}
			gang := len(p.GPUs()) > 1
			if gang {
				f.gangs.bySize[len(p.GPUs())]++
			}
			switch created[p.ID] {
			case 1:
			case 0:
				note(&f.missingCreated, fmt.Sprintf("booking %d", p.ID))
			default:
				note(&f.doubleCreated, fmt.Sprintf("booking %d: %d created events", p.ID, created[p.ID]))
			}
			switch p.State {
			case domain.Released:
				f.released++
			case domain.Expired:
				f.expired++
			default:
				f.stillLive++
			}
			e := ends[p.ID]
			endOK := false
			switch {
			case len(e) == 0 && p.State != domain.Live:
				note(&f.missingEnd, fmt.Sprintf("booking %d is %s with no event", p.ID, p.State))
			case len(e) == 0:
				note(&f.missingEnd, fmt.Sprintf("booking %d never ended (deadline %s ago)", p.ID, time.Since(p.Expires).Round(time.Millisecond)))
			case len(e) > 1:
				note(&f.doubleEnd, fmt.Sprintf("booking %d: %d end events", p.ID, len(e)))
			case string(p.State) != string(e[0].Kind) && (!p.ReclaimedEarly() || e[0].Kind != domain.EventReclaimed):
				note(&f.wrongEnd, fmt.Sprintf("booking %d is %s, its event says %s", p.ID, p.State, e[0].Kind))
			default:
				endOK = true
			}
			// A gang is one booking: one created event and one end, as any.
			if gang && (created[p.ID] != 1 || !endOK) {
				f.gangs.events++
			}
			if len(e) == 1 && e[0].Kind == "expired" {
				f.expiryLateness.Add(e[0].Time.Sub(p.Expires))
			}
		}
		// Each request granted at most once, and every booking from the
		// line named by a request granted for it.
		reqs, err := tx.Requests()
		if err != nil {
			return err
		}
		f.requests = len(reqs)
		forRequest := map[uint64][]uint64{}
		byID := map[uint64]domain.Partition{}
		for _, p := range parts {
			byID[p.ID] = p
			if p.Request != 0 {
				forRequest[p.Request] = append(forRequest[p.Request], p.ID)
			}
		}
		for _, r := range reqs {
			got := forRequest[r.ID]
			gang := max(len(r.Devices), r.Count) > 1
			if gang {
				f.gangs.requests++
			}
			switch r.State {
			case domain.Granted:
				f.granted++
				if len(got) != 1 || got[0] != r.Partition {
					note(&f.badGrants, fmt.Sprintf("request %d granted as %d, bookings for it: %v", r.ID, r.Partition, got))
				}
				if p, ok := byID[r.Partition]; !ok {
					note(&f.badGrants, fmt.Sprintf("request %d granted as %d, which is not in the ledger", r.ID, r.Partition))
				} else if fl := grantFlaw(r, p); fl != "" {
					note(&f.misgranted, fl)
				}
				if gang {
					f.gangs.granted++
				}
			case domain.TimedOut:
				f.timedOut++
				if gang {
					f.gangs.timedOut++
				}
			case domain.Cancelled:
				f.cancelled++
				if gang {
					f.gangs.cancelled++
				}
			}
			if r.State != domain.Granted && len(got) > 0 {
				note(&f.badGrants, fmt.Sprintf("request %d is %s, yet bookings %v were made for it", r.ID, r.State, got))
			}
			if r.State == domain.Waiting {
				note(&f.badGrants, fmt.Sprintf("request %d still waits at the end", r.ID))
			}
		}
		return nil
	})
	if err != nil {
		f.err = err.Error()
	}
	return f
}
