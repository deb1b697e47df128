package admission

import (
	"slices"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/policy"
)

// reclaimAt is when the idle ladder will reclaim booking u's if it stays
// idle: once it has been idle for the policy's idle time, and no sooner
// after its last warning than the ladder spaces them (see ladder). A
// booking that works, is held, or a policy that never reclaims: none.
func reclaimAt(pol domain.Policy, u domain.BookingUsage, now time.Time) (time.Time, bool) {
	if pol.Reclaim == policy.ReclaimOff || pol.Reclaim == "" || u.IdleFor == 0 || u.HeldUntil.After(now) {
		return time.Time{}, false
	}
	// IdleFor counts to Through, the end of the last accounted minute,
	// not to now: counting from now moved the ETA on with every look.
	from := u.Through
	if from.IsZero() || from.After(now) {
		from = now
	}
	at := from.Add(pol.Idle - u.IdleFor)
	if steps := pol.IdleWarn; len(steps) > 0 && u.Warnings >= len(steps) {
		at = Later(at, u.WarnedAt.Add(pol.Idle-steps[len(steps)-1]-domain.AccountEvery/2))
	}
	return Later(at, now), true
}

// ReclaimETAs brings forward the ETA of each request in p's order that an
// idle booking's coming reclaim lets start sooner: the line is laid out
// again with each such booking ending at its reclaim time, and a request
// takes the earlier of its two ETAs. (Told 21:30, booked 38 s later when
// an idle booking was reclaimed for it.) usage is the live bookings'.
func (b *Books) ReclaimETAs(p *LinePlan, usage []domain.BookingUsage) error {
	if len(p.Order) == 0 {
		return nil
	}
	parts := slices.Clone(b.Parts)
	soon := false
	for _, u := range usage {
		at, ok := reclaimAt(b.Pol, u, b.Now)
		i := slices.IndexFunc(parts, func(q domain.Partition) bool { return q.ID == u.Partition })
		if ok && i >= 0 && at.Before(parts[i].Expires) && parts[i].LiveAt(b.Now) {
			parts[i].Expires, soon = at, true
		}
	}
	if !soon {
		return nil
	}
	kept := b.Parts
	b.Parts = parts
	with, err := b.Plan(nil)
	b.Parts = kept
	if err != nil {
		return err
	}
	eta := map[uint64]time.Time{}
	for _, e := range with.Order {
		eta[e.ID] = e.ETA
	}
	for _, g := range with.Grants {
		eta[g.Req.ID] = g.Part.Start
	}
	for i, e := range p.Order {
		if t, ok := eta[e.ID]; ok && t.Before(e.ETA) {
			p.Order[i].ETA = t
			p.Order[i].Reason += "; sooner if an idle booking is reclaimed, as due"
		}
	}
	return nil
}

// LiveIDs are the ids of parts.
func LiveIDs(parts []domain.Partition) []uint64 {
	ids := make([]uint64, len(parts))
	for i, p := range parts {
		ids[i] = p.ID
	}
	return ids
}
