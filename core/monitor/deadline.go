package monitor

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// A booking ends at its deadline, whatever the monitor is doing then.
// Waking at the deadline and making a pass (a read, a sample, a write whose
// commit may wait behind other writers on etcd, or for a file another
// process holds) takes time, and a pass that began before a deadline and
// still waits when it comes holds the next one off. So root's monitor keeps
// a watch armed at all times (watchDeadlines): the SIGTERMs of this host's
// bookings whose deadline comes before the next pass or during it, sent
// by a timer at the deadline, apart from the passes' writes. The pass
// after records them, as it records what was done while the ledger was
// away (see recordOffline); they count as claimed, so nothing is sent
// twice.
//
// They are planned from the last snapshot and the last sample, and
// checked against the ledger deadlineCheck before the deadline when it
// answers by then: a booking extended or ended since, or a signal another
// monitor claimed, is left alone. A ledger that does not answer in time
// does not hold the signal back.

// watchHorizon bounds how far ahead a watch is armed: the monitor makes a
// pass at least every clock.MaxSleep, and no pass lasts longer than a
// store's timeout; a later deadline is a later watch's.
const watchHorizon = 30 * time.Second

// deadlineCheck is how long before a deadline its check looks at the
// ledger, and how long the look may wait before the signal goes on what
// the last read said.
const deadlineCheck = 20 * time.Millisecond

// watchNote is said after the detail of a signal the watch sent.
const watchNote = " (sent at the deadline, before the ledger recorded the expiry)"

// watchDeadlines arms the SIGTERMs of this host's bookings whose deadline
// falls after now and within watchHorizon, until the next settleWatch. Only root's monitor, the
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
	claims := maps.Clone(snap.claims)
	maps.Copy(claims, m.offline)
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
// no `chronos run` has taken it since (its wrapper signals its command
// itself), and nobody has claimed the signal. A ledger that does not answer within
// deadlineCheck says nothing against it.
func (m *Monitor) stillDue(p signalPlan, deadline time.Time) bool {
	ctx, cancel := context.WithTimeout(m.c.Context(), deadlineCheck)
	defer cancel()
	due := true
	err := m.c.Ledger().View(ctx, func(tx *storage.Tx) error {
		b, err := tx.Partition(p.proc.Partition)
		if err != nil {
			return err
		}
		c, claimed, err := tx.Claim(p.key)
		due = b.State == domain.Live && b.Wrapper == nil && !b.Expires.After(deadline) && claimable(c, claimed, m.root)
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return false
	}
	return due || err != nil
}

// settleWatch disarms the watch, or waits for the signals it is
// sending, and keeps those it sent as sent while the ledger was away
// (claimed when sent: no pass sends them again, and SIGKILL follows the
// grace after them); the next pass that writes records them. Each pass
// settles it before it plans, and again after it has run; a pass that
// acts without the ledger settles it first (enforceOffline).
func (m *Monitor) settleWatch() {
	w := m.watch
	if w == nil {
		return
	}
	m.watch = nil
	w.settle()
	m.keepOffline(w)
}
