package core

import (
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// ChargeWrites is the most charge writes: the owner's usage, the interval
// held, and the old intervals it lets go of.
const ChargeWrites = 2 + storage.HeldDropMax

// charge adds what a booking held until end to its owner's usage, in the
// transaction that ends it, and keeps the interval it held for hours
// quotas and usage reports (letting go of those no window or report
// reaches any more).
func charge(tx *storage.Tx, p domain.Partition, end time.Time, pol domain.Policy) error {
	held := admission.HeldSeconds(p, end)
	if held == 0 {
		return nil
	}
	u, ok, err := tx.UserUsage(p.UID)
	if err != nil {
		return err
	}
	if !ok {
		u = domain.UserUsage{UID: p.UID, User: p.User, At: end}
	}
	at := admission.Later(u.At, end)
	u.GPUSeconds = admission.Decay(u.GPUSeconds, u.At, at, pol.HalfLife) + held
	u.At, u.User = at, p.User
	if err := tx.PutUserUsage(u); err != nil {
		return err
	}
	if err := tx.AddHeld(p.UID, domain.Held{Partition: p.ID, Start: p.Start, End: admission.Earlier(end, p.Expires), SharePPM: p.TotalPPM()}); err != nil {
		return err
	}
	return tx.DropHeld(p.UID, end.Add(-max(admission.UsageMonth, admission.LongestWindow(pol))))
}
