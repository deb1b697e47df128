package report

import (
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/storage"
)

// GPUHistory is one GPU's recent past, as monitors recorded it: a sample
// per minute and each booking's time on the GPU with its idle stretches.
// The app's history view draws it; a freshly opened app shows it at once.
type GPUHistory struct {
	Device   int                `json:"device"`
	UUID     string             `json:"uuid"`
	From     time.Time          `json:"from"`
	To       time.Time          `json:"to"`
	Minutes  []domain.GPUMinute `json:"minutes"` // oldest first; a minute no monitor watched is missing
	Bookings []BookingSpan      `json:"bookings"`
}

// BookingSpan is one booking's time on the GPU within a history's window.
type BookingSpan struct {
	ID       uint64 `json:"id"`
	Owner    string `json:"owner"`
	UID      int    `json:"uid"`
	SharePPM int64  `json:"share_ppm"`
	// Start and End are clipped to the window; End is the window's end
	// while the booking is live.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Idle  []Span    `json:"idle,omitempty"` // whole minutes in which it did no GPU work
}

// Span is a stretch of time.
type Span struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// History returns the last window (an hour, say) of one GPU.
func History(c *core.Client, device int, window time.Duration) (GPUHistory, error) {
	inv, err := c.Inventory()
	if err != nil {
		return GPUHistory{}, err
	}
	dev, err := admission.FindDevice(inv, device)
	if err != nil {
		return GPUHistory{}, err
	}
	now := c.Now()
	h := GPUHistory{Device: device, UUID: dev.UUID, From: now.Add(-window), To: now}
	err = c.Ledger().View(c.Context(), func(tx *storage.Tx) error {
		if h.Minutes, err = tx.GPUMinutes(h.From.Truncate(domain.AccountEvery), h.To, dev.UUID); err != nil {
			return err
		}
		pol, err := ledger.Policy(tx)
		if err != nil {
			return err
		}
		parts, err := tx.PartitionsSince(h.From.Add(-pol.MaxLength))
		if err != nil {
			return err
		}
		for _, p := range parts {
			// This GPU's bookings only: by index, and by UUID where the
			// booking knows it (the index may since name another card).
			if on := p.On(device); !p.Holds(device) || on.DeviceUUID != "" && on.DeviceUUID != dev.UUID {
				continue
			}
			if span, ok := spanOf(p, h.From, h.To); ok {
				h.Bookings = append(h.Bookings, span)
			}
		}
		return nil
	})
	if err != nil {
		return GPUHistory{}, err
	}
	for i := range h.Bookings {
		h.Bookings[i].Idle = idleStretches(h.Bookings[i], h.Minutes)
	}
	return h, nil
}

// spanOf is p's time on its GPU within [from, to).
func spanOf(p domain.Partition, from, to time.Time) (BookingSpan, bool) {
	start, end := admission.Later(p.Start, from), admission.Earlier(p.End(), to)
	if !start.Before(end) {
		return BookingSpan{}, false
	}
	return BookingSpan{ID: p.ID, Owner: p.User, UID: p.UID, SharePPM: p.SharePPM, Start: start, End: end}, true
}

// idleStretches joins the minutes that list b as idle into stretches,
// clipped to b's span.
func idleStretches(b BookingSpan, minutes []domain.GPUMinute) []Span {
	var out []Span
	for _, m := range minutes {
		idle := false
		for _, id := range m.Idle {
			idle = idle || id == b.ID
		}
		if !idle {
			continue
		}
		s := Span{From: admission.Later(m.Minute, b.Start), To: admission.Earlier(m.Minute.Add(domain.AccountEvery), b.End)}
		if !s.From.Before(s.To) {
			continue
		}
		if n := len(out); n > 0 && !out[n-1].To.Before(s.From) {
			out[n-1].To = s.To
			continue
		}
		out = append(out, s)
	}
	return out
}
