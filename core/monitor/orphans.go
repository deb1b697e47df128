package monitor

import (
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/storage"
)

// orphans sorts the live bookings whose wrapper died on this machine: those
// to release (nothing of the command runs: no process in its group and no
// GPU process of the booking in atts) and those to mark orphaned. Only
// the bookings of users this monitor keeps (root: everyone's) are looked at.
func orphans(parts []domain.Partition, atts []admission.Attribution, now time.Time, root bool) (release, mark []uint64) {
	onGPU := map[uint64]bool{}
	for _, a := range atts {
		onGPU[a.Partition] = true
	}
	for _, p := range parts {
		if !p.LiveAt(now) || p.Wrapper == nil || !proc.KeepsRecordsOf(root, p.UID) {
			continue // ended ones are expiry's to act on; others' are root's
		}
		switch proc.FateOf(p) {
		case proc.WrapperGone:
			if onGPU[p.ID] {
				if p.Orphaned.IsZero() {
					mark = append(mark, p.ID)
				}
			} else {
				release = append(release, p.ID)
			}
		case proc.WrapperGoneCommandRuns:
			if p.Orphaned.IsZero() {
				mark = append(mark, p.ID)
			}
		}
	}
	return release, mark
}

// settleOrphans releases and marks, inside tx, what orphans found, checking
// each booking again: another monitor may have got there first.
func (m *Monitor) settleOrphans(tx *storage.Tx, release, mark []uint64, now time.Time, policy func() (domain.Policy, error)) ([]Act, error) {
	var acts []Act
	settle := func(id uint64, kind domain.EventKind, why string, change func(*domain.Partition) bool) error {
		p, err := tx.Partition(id)
		if err != nil {
			return err
		}
		if !p.LiveAt(now) || p.Wrapper == nil || !proc.KeepsRecordsOf(m.root, p.UID) || !change(&p) {
			return nil
		}
		put := tx.PutPartition
		if p.State == domain.Released {
			// Charged for the time held, like any end.
			put = func(p *domain.Partition) error { return ledger.EndBooking(tx, p, domain.Released, now, policy) }
		}
		if err := put(&p); err != nil {
			return err
		}
		a := Act{Time: now, Kind: kind, Partition: id, User: p.User, Detail: proc.WrapperText(p.Wrapper) + why}
		acts = append(acts, a)
		return m.record(tx, a)
	}
	for _, id := range release {
		err := settle(id, domain.EventReleased, " is gone and nothing of its command runs any more", func(p *domain.Partition) bool {
			p.State, p.Ended = domain.Released, now
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	for _, id := range mark {
		err := settle(id, domain.EventOrphaned, " is gone but its command still runs; the booking is released when nothing of it does", func(p *domain.Partition) bool {
			if !p.Orphaned.IsZero() {
				return false
			}
			p.Orphaned = now
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return acts, nil
}
