package monitor

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// A booking ends at its deadline, whatever the monitor is doing then. A
// pass can take seconds when the ledger is busy (its read, or its write
// behind other writers on etcd, or a file another process holds), and the
// next pass, which would find the booking due, starts only when this one
// ends. So each pass arms, for as long as it runs, the SIGTERMs of this
// host's bookings whose deadline comes meanwhile (watchDeadlines): a timer
// apart from the pass's own writes sends them at the deadline, and the
// next pass records them, as it records what was done while the ledger was
// away (see recordOffline).
//
// They are planned from the last snapshot and the last sample. At the
// deadline each is checked against the ledger, if it answers within
// deadlineCheck: a booking extended or ended since, or a signal another
// monitor claimed, is left alone. A ledger that does not answer in time
// does not hold the signal back.

// watchHorizon bounds how far ahead a pass arms deadlines: no pass lasts
// longer than a store's timeout, and a later deadline is the next pass's.
const watchHorizon = 30 * time.Second

// deadlineCheck is how long the check at a deadline may wait for the
// ledger before the signal goes on what the last read said.
const deadlineCheck = 20 * time.Millisecond

// watchNote is said after the detail of a signal the watch sent.
const watchNote = " (sent at the deadline while the monitor's pass waited on the ledger)"

// watchDeadlines arms the SIGTERMs of this host's bookings whose deadline
// falls after now and within watchHorizon. Only root's monitor, the
// host's enforcer, goes first (see goesFirst); it needs a snapshot and a
// sample to plan from.
func (m *Monitor) watchDeadlines(now time.Time) *earlyTerm {
	snap, s := m.good, m.lastSample
	if !m.root || snap == nil || s == nil {
		return m.termAt(nil)
	}
	var local []domain.Partition
	due := map[uint64]time.Time{}
	for _, p := range snap.parts {
		if !m.c.OnThisHost(p) {
			continue
		}
		local = append(local, p)
		if p.State == domain.Live && p.Wrapper == nil && p.Expires.After(now) && p.Expires.Before(now.Add(watchHorizon)) {
			due[p.ID] = p.Expires
		}
	}
	if len(due) == 0 {
		return m.termAt(nil)
	}
	claims := snap.claims
	if len(m.offline) > 0 {
		claims = make(map[string]domain.Claim, len(claims)+len(m.offline))
		for k, c := range snap.claims {
			claims[k] = c
		}
		for k, c := range m.offline {
			claims[k] = c
		}
	}
	var deadlines []time.Time
	for _, d := range due {
		if !slices.ContainsFunc(deadlines, d.Equal) {
			deadlines = append(deadlines, d)
		}
	}
	slices.SortFunc(deadlines, time.Time.Compare)
	var batches []termBatch
	for _, d := range deadlines {
		// Only the processes of the bookings ending at d, as they will
		// be attributed then: nothing else is weighed (no MPS look).
		atts := slices.DeleteFunc(admission.Attribute(*s, local, d), func(a admission.Attribution) bool {
			end, ok := due[a.Partition]
			return a.Verdict != admission.Ended || !ok || !end.Equal(d)
		})
		plans, _ := m.plan(atts, local, claims, snap.pol, d)
		plans = slices.DeleteFunc(plans, func(p signalPlan) bool { return !m.goesFirst(p, true) })
		if len(plans) > 0 {
			batches = append(batches, termBatch{at: d, plans: plans, note: watchNote, check: m.stillDue})
		}
	}
	return m.termAt(batches)
}

// stillDue says whether plan's SIGTERM is still to send: its booking has
// not been extended, released or expired by another since the last read,
// and nobody has claimed the signal. A ledger that does not answer within
// deadlineCheck says nothing against it.
func (m *Monitor) stillDue(p signalPlan) bool {
	ctx, cancel := context.WithTimeout(m.c.Context(), deadlineCheck)
	defer cancel()
	now := m.c.Now()
	due := true
	err := m.c.Ledger().View(ctx, func(tx *storage.Tx) error {
		b, err := tx.Partition(p.proc.Partition)
		if err != nil {
			return err
		}
		c, claimed, err := tx.Claim(p.key)
		due = b.State == domain.Live && !b.Expires.After(now) && claimable(c, claimed, m.root)
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return false
	}
	return due || err != nil
}

// settleWatch disarms the pass's watch, or waits for the signals it is
// sending, and keeps those it sent as sent while the ledger was away
// (claimed when sent: no pass sends them again, and SIGKILL follows the
// grace after them); the next pass that writes records them. A pass that
// goes on to act without the ledger settles it first (enforceOffline).
func (m *Monitor) settleWatch() {
	w := m.watch
	if w == nil {
		return
	}
	m.watch = nil
	_, acts := w.settle()
	if len(acts) == 0 {
		return
	}
	if m.offline == nil {
		m.offline = map[string]domain.Claim{}
	}
	for i, p := range w.sent {
		m.offline[p.key] = domain.Claim{By: m.o.Name, At: acts[i].Time}
	}
	for _, a := range acts {
		m.report(a)
	}
	m.unrecorded = append(m.unrecorded, acts...)
}
