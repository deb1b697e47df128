package monitor

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/storage"
)

// read returns the ledger's state, from the snapshot when nothing can have
// changed since it was taken.
func (m *Monitor) read(changed bool, now time.Time) (*snapshot, error) {
	stamp := m.c.Ledger().Version()
	if s := m.snap; s != nil && !changed && s.stamp == stamp && now.Sub(s.read) < snapshotMaxAge && !now.Before(s.read) {
		return s, nil
	}
	if m.good != nil && now.Before(m.retryAt) && m.lastErr != nil {
		// Unreachable a moment ago: don't wait on it again yet, change
		// notice or not; each try may take the store's whole timeout.
		return nil, m.lastErr
	}
	s := &snapshot{pol: policy.Default(), stamp: stamp, read: now}
	err := m.c.Ledger().View(m.c.Context(), func(tx *storage.Tx) error {
		var err error
		if s.pol, err = ledger.Policy(tx); err != nil {
			return err
		}
		// Bookings that ended long ago have no processes left to act on.
		if s.parts, err = tx.PartitionsSince(now.Add(-s.pol.MaxLength - admission.AttributionWindow)); err != nil {
			return err
		}
		if s.claims, err = tx.Claims(); err != nil {
			return err
		}
		line, err := tx.WaitingRequests()
		if err != nil {
			return err
		}
		s.waiting = len(line) > 0
		inv, _, err := tx.Inventory()
		if err != nil {
			return err
		}
		s.inventoryBackend = inv.Backend
		// Readings that don't decode are replaced, not a reason to stop.
		s.readings, _ = tx.DeviceReadings()
		s.events, err = m.notes.events(tx, now)
		return err
	})
	if errors.Is(err, storage.ErrUnavailable) {
		m.retryAt = now.Add(offlineRetry)
	}
	if err != nil {
		return nil, err
	}
	s.ledgerNotifyURL = s.pol.NotifyURL
	if m.o.Policy != nil {
		s.pol = *m.o.Policy
	}
	m.snap, m.good, m.retryAt = s, s, time.Time{}
	return s, nil
}

//nolint:funlen,gocyclo // one pass over shared state: read, plan, one transaction, then report and signal; its steps share the snapshot, the claims and the transaction's outcome
func (m *Monitor) onePass(changed bool, now time.Time) (time.Time, error) {
	m.notes.drain(m.report)
	snap, err := m.read(changed, now)
	if err != nil && m.good != nil && withoutLedger(err) {
		return m.enforceOffline(m.c.Now(), err) // the read may have taken a while
	}
	if err != nil {
		return now, err
	}
	parts, claims, pol := snap.parts, snap.claims, snap.pol
	// Each host's monitor keeps the books of its own host's bookings (see
	// keeping); processes are matched only against this host's, whose
	// GPUs it samples.
	local := slices.DeleteFunc(slices.Clone(parts), func(p domain.Partition) bool { return !m.c.OnThisHost(p) })
	if m.o.Backend != nil && !now.Before(m.nextInventory) {
		m.nextInventory = now.Add(inventoryEvery)
		if err := m.refreshInventory(); err != nil {
			return now, err
		}
	}

	kept := m.keep(parts, now, pol.WarnLead)
	due, warn := dueAt(kept.parts, now, pol.WarnLead)
	var atts []admission.Attribution
	var readings []domain.DeviceReading // readings to store
	var release, orphaned []uint64      // bookings whose chronos run died
	if m.o.Backend != nil && (len(due) > 0 || !now.Before(m.nextSample)) {
		s, err := m.o.Backend.Sample()
		if err != nil {
			return now, fmt.Errorf("sample GPUs: %w", err)
		}
		m.nextSample = now.Add(m.o.SampleEvery)
		m.lastSample = &s
		m.pub.offer(s)
		atts = admission.Attribute(s, local, now)
		m.o.Observer.Sampled(s, atts)
		m.acct.observe(s, atts, local, now)
		if err := m.acct.skipTaken(m.c.Context(), m.c.Ledger()); err != nil {
			return now, err
		}
		// Only readings of the GPUs the inventory lists: a simulated
		// backend never speaks for a ledger of real GPUs. A ledger many
		// hosts share keeps none: hosts' live readings go in their
		// published statuses instead.
		if rs := admission.ReadingOf(s, atts, now); m.c.Host() == "" && snap.inventoryBackend == s.Backend && admission.ReadingDue(snap.readings, rs) {
			readings = rs
		}
		release, orphaned = orphans(local, atts, now, m.root)
	}
	if len(m.offline) > 0 {
		// Signals sent while the ledger was away count as claimed: no
		// second SIGTERM, and SIGKILL after the grace from the first.
		claims = maps.Clone(claims)
		for k, c := range m.offline {
			if _, ok := claims[k]; !ok {
				claims[k] = c
			}
			if now.Sub(c.At) > admission.AttributionWindow {
				delete(m.offline, k)
			}
		}
	}
	plans, notices := m.plan(atts, local, claims, pol, now)
	todo := pass{due: due, warn: warn, notices: notices, plans: plans, release: release, orphaned: orphaned, readings: readings,
		offline: min(len(m.unrecorded), offlineBatch) + min(len(m.offline), offlineBatch)}
	acctBudget := todo.bound()
	due, warn, notices, plans, release, orphaned = todo.due, todo.warn, todo.notices, todo.plans, todo.release, todo.orphaned
	m.notes.prepare(snap, m.c.Me(), m.root)

	if !todo.empty() || len(m.notes.want) > 0 || m.acct.done != nil || len(m.unrecorded) > 0 {
		if at, wait := m.spacing.wait(now); wait {
			return at, nil // the deadline watch has sent what was due
		}
		m.snap = nil // this pass writes: read afresh next time
		var acts []Act
		var mine []signalPlan
		accounted, placeMore := false, false
		recordedOffline := 0 // of m.unrecorded
		// A pass goes ahead of other writers waiting their turn:
		// recording an expiry must not wait behind the lab's bookings; and
		// if it waits all the same, the processes of expired bookings get
		// their SIGTERM at the deadline regardless (see termEarly).
		early := m.termEarly(plans, local)
		began := m.c.Now()
		err := storage.UpdateUrgent(m.c.Context(), m.c.Ledger(), func(tx *storage.Tx) error {
			acts, mine, placeMore = nil, nil, false
			// Read once for every booking the pass ends, if it ends any.
			policy := ledger.PolicyOnce(tx)
			var err error
			if acts, err = m.expireAndWarn(tx, due, warn, atts, now, policy, kept); err != nil {
				return err
			}
			settled, err := m.settleOrphans(tx, release, orphaned, now, policy)
			if err != nil {
				return err
			}
			acts = append(acts, settled...)
			fresh, err := tx.Claims()
			if err != nil {
				return err
			}
			if recordedOffline, err = m.recordOffline(tx, fresh); err != nil {
				return err
			}
			more, complete, err := m.account(tx, pol, now, acctBudget)
			if err != nil {
				return err
			}
			accounted = complete
			acts = append(acts, more...)
			if err := m.notes.claim(tx, fresh, m, now); err != nil {
				return err
			}
			for _, n := range notices {
				if _, taken := fresh[n.key]; taken {
					continue
				}
				if err := m.claim(tx, n.key, false, now); err != nil {
					return err
				}
				if err := m.record(tx, n.act); err != nil {
					return err
				}
				acts = append(acts, n.act)
			}
			for _, p := range plans {
				if c, exists := fresh[p.key]; !claimable(c, exists, m.root) {
					continue
				}
				if err := m.claim(tx, p.key, false, now); err != nil {
					return err
				}
				mine = append(mine, p)
			}
			if len(readings) > 0 {
				if err := ledger.PutReadingIfDue(tx, readings); err != nil {
					return err
				}
			}
			if err := tx.DropClaims(now.Add(-24 * time.Hour)); err != nil {
				return err
			}
			// The room that expiries, releases and reclaims freed goes to
			// the line at once, in the writes the pass left.
			placeMore, err = m.c.PlaceLine(tx)
			return err
		})
		m.spacing.wrote(began, m.c.Now(), err == nil && len(due)+len(warn) > 0 && !slices.ContainsFunc(acts, func(a Act) bool {
			return a.Kind == domain.EventExpired || a.Kind == domain.EventWarned
		}))
		sent, earlyActs := early.settle()
		if err != nil {
			m.keepOffline(early) // sent, not recorded: never again, said, and recorded later
		} else {
			m.unrecorded = m.unrecorded[recordedOffline:] // the pass recorded these
		}
		if withoutLedger(err) && m.good != nil {
			// The ledger went away, or other writers kept it: enforce
			// what is due without it. A busy ledger is tried again at
			// the next pass, which records what this one could not.
			if errors.Is(err, storage.ErrUnavailable) {
				m.retryAt = now.Add(offlineRetry)
			}
			return m.enforceOffline(m.c.Now(), err)
		}
		if err != nil {
			return now, err
		}
		if accounted {
			m.acct.accounted()
		}
		m.c.PlaceRest(placeMore)
		m.notes.done(m.o.OnNotice)
		// Report the moment the flips became true for everyone: the commit.
		committed := m.c.Now()
		for _, a := range acts {
			a.Time = committed
			m.report(a)
		}
		mine = slices.DeleteFunc(mine, func(p signalPlan) bool { return sent[p.key] })
		if len(mine) > 0 || len(earlyActs) > 0 {
			if err := m.signal(mine, earlyActs); err != nil {
				return now, err
			}
		}
	}
	m.notes.done(m.o.OnNotice)
	if m.acct.done != nil {
		return now, nil // the rest of the window, at once
	}
	next := m.nextWake(kept.parts, claims, pol, now)
	if snap.waiting || !m.nextLine.IsZero() && !now.Before(m.nextLine) {
		// Time alone can make a placement due: an ETA reached, a quota's
		// window slid on, a timeout, a waiting process gone.
		if m.nextLine, err = m.c.TendLine(); err != nil {
			return now, err
		}
		if !m.nextLine.IsZero() && m.nextLine.Before(next) {
			next = m.nextLine
		}
	}
	return next, nil
}

// passWrites bounds the writes of one pass's transaction (see
// storage.WriteBudget). What does not fit stays due, and the next pass, at
// once, does it.
const passWrites = storage.WriteBudget

// pass is what one monitor pass means to write.
type pass struct {
	due, warn         []uint64
	notices           []pendingNotice
	plans             []signalPlan
	release, orphaned []uint64 // bookings whose chronos run died
	readings          []domain.DeviceReading
	offline           int // writes of what was done while the ledger could not record it (see recordOffline)
}

// bound keeps what the pass writes within passWrites: an expiry or a
// release writes its booking, its live index entry and an event, and
// charges its owner (see charge); a warning or an orphan mark its booking
// and an event; a notice its claim and an event; a signal its claim;
// readings a record each and as many deletions; what was done while the
// ledger could not record it (the deadline watch's signals, most passes
// after a deadline) an event and a claim each, at most offlineBatch of
// each. Old claims dropped and the
// event sequence take some; it returns what is left for accounting (see
// Monitor.account). Placing the waiting line comes last, in what the pass
// left (see Client.placeLine).
func (p *pass) bound() int {
	budget := passWrites - storage.DropMax - 1 - 2*len(p.readings) - p.offline
	take := func(n, cost int) int {
		k := max(0, min(n, budget/cost))
		budget -= k * cost
		return k
	}
	p.due = p.due[:take(len(p.due), 3+ledger.ChargeWrites)]
	p.release = p.release[:take(len(p.release), 3+ledger.ChargeWrites)]
	p.warn = p.warn[:take(len(p.warn), 2)]
	p.orphaned = p.orphaned[:take(len(p.orphaned), 2)]
	p.notices = p.notices[:take(len(p.notices), 2)]
	p.plans = p.plans[:take(len(p.plans), 1)]
	return budget
}

func (p pass) empty() bool {
	return len(p.due)+len(p.warn)+len(p.plans)+len(p.notices)+len(p.release)+len(p.orphaned)+len(p.readings) == 0
}

// withoutLedger reports whether a pass failed for want of the ledger: it
// cannot be reached, or other writers kept it past the timeout. Either way
// the deadlines the monitor knows are still kept (see enforceOffline).
func withoutLedger(err error) bool {
	return errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrBusy)
}
