package admission

import (
	"math"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
)

// Fair share, as docs/fairness.md says: each user's usage U decays with the
// policy's half-life H and grows by what their bookings hold (share in
// GPU-equivalents × seconds actually held), on whichever host. It is
// measured against the lab's capacity (every GPU of every host), not
// against others' use, so nobody is penalised for using GPUs nobody else
// wanted: u = U / (GPUs × H / ln 2), the usage of a user who held every
// GPU for ever. The factor F = 2^(−u/s), s the user's
// share, is Slurm's: 1 for no use, 0.5 exactly at one's share.

// Decay is what usage v, recorded at, is worth at now.
func Decay(v float64, at, now time.Time, halfLife time.Duration) float64 {
	dt := now.Sub(at)
	if dt <= 0 || halfLife <= 0 {
		return v
	}
	return v * math.Exp2(-dt.Seconds()/halfLife.Seconds())
}

// HeldSeconds is the share-weighted time a booking held by end: a 50%
// booking held an hour is 1,800.
func HeldSeconds(p domain.Partition, end time.Time) float64 {
	end = Earlier(end, p.Expires)
	if !end.After(p.Start) {
		return 0
	}
	return float64(p.TotalPPM()) / human.Ppm * end.Sub(p.Start).Seconds()
}

// LongestWindow is the longest window any hours quota of the policy
// looks back over (0: none is set).
func LongestWindow(pol domain.Policy) time.Duration {
	var window time.Duration
	if pol.UserHours != nil {
		window = pol.HoursWindow
	}
	for _, o := range pol.Overrides {
		var l policy.Limits
		_ = policy.ApplyLimits(&l, o.Settings)
		if l.UserHours != nil {
			window = max(window, l.HoursWindow)
		}
		if c, ok := policy.GroupCapOf("", o.Settings); ok && c.Hours != nil {
			window = max(window, c.Window)
		}
	}
	return window
}

// HeldSlots is the calendar of the intervals uid's ended bookings held
// (read from the ledger: storage's HeldSince): only hours quotas and
// reports look at them (they hold no GPU any more, so they name none).
func HeldSlots(held []domain.Held, uid int) Calendar {
	cal := make(Calendar, 0, len(held))
	for _, h := range held {
		cal = append(cal, slot{gpu: noGPU, uid: uid, share: h.SharePPM, start: h.Start, end: h.End})
	}
	return cal
}

// UsageAt is each user's usage at now in GPU-seconds: the stored figure
// decayed to now, plus what their started bookings have held so far (they
// are charged when they end).
func UsageAt(stored []domain.UserUsage, live []domain.Partition, now time.Time, halfLife time.Duration) map[int]float64 {
	out := map[int]float64{}
	for _, u := range stored {
		out[u.UID] += Decay(u.GPUSeconds, u.At, now, halfLife)
	}
	for _, p := range live {
		if p.State == domain.Live {
			out[p.UID] += HeldSeconds(p, now)
		}
	}
	return out
}

// FairShare is F = 2^(−u/s) for usage in GPU-seconds in a lab of gpus.
func FairShare(usage float64, gpus int, halfLife time.Duration, share float64) float64 {
	if gpus <= 0 || halfLife <= 0 || share <= 0 {
		return 1
	}
	u := usage / (float64(gpus) * halfLife.Seconds() / math.Ln2)
	return math.Exp2(-u / share)
}

// Priority is P = F + w_age · min(wait / max_age, 1): fair share first,
// and time waited so that nobody starves.
func Priority(factor float64, waited time.Duration, pol domain.Policy) float64 {
	age := 1.0
	if pol.MaxAge > 0 {
		age = min(max(waited.Seconds(), 0)/pol.MaxAge.Seconds(), 1)
	}
	return factor + pol.AgeWeight*age
}

// The windows usage shows GPU-hours of.
const (
	UsageWeek  = 7 * 24 * time.Hour
	UsageMonth = 30 * 24 * time.Hour
)
