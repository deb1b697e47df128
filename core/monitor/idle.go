package monitor

import (
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/storage"
)

// ladder moves one live booking along the idle reclaim ladder, inside the
// transaction that accounted its latest minute (so however many monitors
// run, each step is taken once). Steps come in order, one per minute at
// most, each at least as long after the last as the policy spaces them:
// the owner always gets the warning and the time it promised, even when
// root turns the ladder on over a booking long idle, or after a hold.
func (m *Monitor) ladder(tx *storage.Tx, p *domain.Partition, u *domain.BookingUsage, pol domain.Policy, now time.Time) ([]Act, error) {
	if pol.Reclaim == policy.ReclaimOff || pol.Reclaim == "" || u.IdleFor == 0 || u.HeldUntil.After(now) {
		return nil, nil
	}
	steps := pol.IdleWarn
	k := min(u.Warnings, len(steps))
	// Due: idle long enough, and spaced from the step before. Windows end
	// a moment apart, so allow half a window.
	due := func(at time.Duration) bool {
		if u.IdleFor < at {
			return false
		}
		return k == 0 || now.Sub(u.WarnedAt) >= at-steps[k-1]-domain.AccountEvery/2
	}
	if k < len(steps) {
		if !due(steps[k]) {
			return nil, nil
		}
		u.Warnings, u.WarnedAt = k+1, now
		a := Act{Time: now, Kind: domain.EventIdle, Partition: p.ID, User: p.User,
			Detail: fmt.Sprintf("idle for %s on GPU %s: %s — do GPU work, or `chronos hold %d %s --reason …`",
				formatIdle(u.IdleFor), human.FormatGPUs("", p.GPUs()), reclaimWhen(pol, pol.Idle-u.IdleFor), p.ID, human.FormatDuration(pol.HoldMax))}
		return []Act{a}, m.record(tx, a)
	}
	if !due(pol.Idle) {
		return nil, nil
	}
	if pol.Reclaim == policy.ReclaimWhenWaiting {
		helps, err := m.c.ReclaimHelps(tx, *p, now)
		if err != nil || !helps {
			return nil, err
		}
	}
	if err := Reclaim(tx, p, now); err != nil {
		return nil, err
	}
	u.Reclaimed = now
	why := "reclaim=always"
	if pol.Reclaim == policy.ReclaimWhenWaiting {
		why = "someone is waiting for it"
	}
	a := Act{Time: now, Kind: domain.EventReclaimed, Partition: p.ID, User: p.User,
		Detail: fmt.Sprintf("released after %s idle on GPU %s (%s); its processes are handled as at expiry (%s)",
			formatIdle(u.IdleFor), human.FormatGPUs("", p.GPUs()), why, pol.Expiry)}
	return []Act{a}, m.record(tx, a)
}

// Reclaim ends a booking early, as if its deadline were now: its
// processes are then handled as at expiry, and one started after now is
// no longer its (its End is now). Its deadline is kept, so that it shows
// as reclaimed (ReclaimedEarly), not as expired at that time. Its owner is
// charged for the time it was held.
func Reclaim(tx *storage.Tx, p *domain.Partition, now time.Time) error {
	return ledger.EndBooking(tx, p, domain.Expired, now, ledger.PolicyOnce(tx))
}

// formatIdle is how long a booking has been idle, for its owner: in whole
// minutes, or seconds under a minute (a ladder shortened for a test warns
// then, and "idle for 0s" would say it was not idle).
func formatIdle(d time.Duration) string {
	if d < time.Minute {
		return human.FormatDuration(d.Truncate(time.Second))
	}
	return human.FormatDuration(d.Truncate(time.Minute))
}

// reclaimWhen says what happens at the end of the ladder, in left.
func reclaimWhen(pol domain.Policy, left time.Duration) string {
	in := "in " + human.FormatDuration(max(left, domain.AccountEvery).Round(time.Minute))
	if pol.Reclaim == policy.ReclaimWhenWaiting {
		return fmt.Sprintf("it will be released after %s idle if someone is waiting for the GPU (%s)", human.FormatDuration(pol.Idle), in)
	}
	return fmt.Sprintf("it will be released after %s idle (%s)", human.FormatDuration(pol.Idle), in)
}
