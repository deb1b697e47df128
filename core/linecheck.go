package core

import (
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// LineCheck is the waiting line on one reading of the ledger, laid out
// for checking from outside that its order holds (the soak's checker
// does): every waiting request with its priority and ETA, and for each
// booking the line granted since a given instant, the priority its request
// would have now and the ETA each waiting request would have without it.
// A booking granted to a request of lower priority must never be what
// makes a request ahead of it wait longer than it was told.
type LineCheck struct {
	Waiting []admission.QueueEntry
	Granted []GrantCheck
}

// GrantCheck is one booking granted from the line.
type GrantCheck struct {
	Booking  uint64
	Request  uint64
	Priority float64
	// Without is each waiting request's ETA were this booking not there.
	Without map[uint64]time.Time
}

// CheckLine reads the ledger once and lays the line out for checking;
// since bounds which granted bookings it looks at (by when they were
// booked).
func (c *Client) CheckLine(since time.Time) (LineCheck, error) {
	var out LineCheck
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		b, plan, err := c.lineIn(tx, func(domain.Request) bool { return true }) // the line as stored
		if err != nil {
			return err
		}
		out.Waiting = plan.Order
		if len(plan.Order) == 0 {
			return nil
		}
		used := admission.UsageAt(b.Usage, b.Parts, b.Now, b.Pol.HalfLife)
		all := b.Parts
		for i, p := range all {
			if p.Request == 0 || !p.Created.After(since) || p.EndedAt(b.Now) {
				continue
			}
			r, err := tx.Request(p.Request)
			if err != nil {
				return err
			}
			g := GrantCheck{Booking: p.ID, Request: r.ID, Without: map[uint64]time.Time{},
				Priority: admission.Priority(admission.FairShare(used[r.UID], b.Gpus, b.Pol.HalfLife, b.LimitsFor(r.UID, r.User).Share), b.Now.Sub(r.Created), b.Pol)}
			b.Parts = slices.Delete(slices.Clone(all), i, i+1)
			without, err := b.Plan(nil)
			b.Parts = all
			if err != nil {
				return err
			}
			for _, e := range without.Order {
				g.Without[e.ID] = e.ETA
			}
			for _, gr := range without.Grants {
				g.Without[gr.Req.ID] = gr.Part.Start
			}
			out.Granted = append(out.Granted, g)
		}
		return nil
	})
	return out, err
}
