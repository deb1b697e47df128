package domain

import (
	"cmp"
	"slices"
	"time"
)

// AccountEvery is the accounting window. A booking's usage, its GPU's
// minute sample and the idle ladder move once a window, in one transaction
// for every booking, so the ledger takes one write a minute however many
// bookings there are.
const AccountEvery = time.Minute

func SortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// usageStale is how old a booking's usage may be and still say it is idle
// now: no monitor watched it since.
const usageStale = 3 * AccountEvery

// IdleFor is how long a booking has been idle as of now: zero while it
// works, when it has ended, or when no monitor has watched it lately.
func IdleFor(p Partition, u BookingUsage, now time.Time) time.Duration {
	if !p.LiveAt(now) || now.Sub(u.Through) > usageStale {
		return 0
	}
	return u.IdleFor
}

// BookingUsage is what monitors measured of one booking, and where it stands on
// the idle reclaim ladder. Monitors write it at most once a minute.
type BookingUsage struct {
	Partition uint64 `json:"partition"`
	// Through is the end of the last minute accounted: a minute is
	// accounted once, however many monitors watched it.
	Through time.Time `json:"through,omitzero"`
	// Idle is all the time the booking was seen idle; GPUTime is the GPU
	// time its processes used (SM activity × time: a whole GPU busy for a
	// minute is a minute).
	Idle       time.Duration `json:"idle,omitempty"`
	GPUTime    time.Duration `json:"gpu_time,omitempty"`
	MemoryPeak uint64        `json:"memory_peak,omitempty"`
	LastActive time.Time     `json:"last_active,omitzero"`
	// IdleFor is how long the booking has been idle without a break (time
	// no monitor watched does not count); zero while it works.
	IdleFor time.Duration `json:"idle_for,omitempty"`
	// Warnings counts the ladder's warnings sent in this idle stretch, the
	// last at WarnedAt.
	Warnings int       `json:"warnings,omitempty"`
	WarnedAt time.Time `json:"warned_at,omitzero"`
	// A hold exempts the booking from reclaim until HeldUntil.
	HeldUntil  time.Time `json:"held_until,omitzero"`
	HoldReason string    `json:"hold_reason,omitempty"`
	Holds      int       `json:"holds,omitempty"`
	// HoldSince is when the holds of this idle stretch began: together
	// they last at most the policy's hold-max (root's aside).
	HoldSince time.Time `json:"hold_since,omitzero"`
	Reclaimed time.Time `json:"reclaimed,omitzero"`
}

// GPUMinute is one GPU's minute: mean utilization, peak memory used, and
// which live bookings worked or sat idle.
type GPUMinute struct {
	Minute      time.Time `json:"minute"` // its start
	Device      int       `json:"device"`
	UUID        string    `json:"uuid"`
	Util        int       `json:"util"` // mean percent; -1 when the GPU did not say
	MemoryUsed  uint64    `json:"memory_used"`
	MemoryTotal uint64    `json:"memory_total"`
	Active      []uint64  `json:"active,omitempty"`
	Idle        []uint64  `json:"idle,omitempty"`
}

// UnbookedUse is the GPU time one user's processes used with no booking,
// on one day (UTC).
type UnbookedUse struct {
	Day     time.Time     `json:"day"`
	UID     int           `json:"uid"`
	User    string        `json:"user"`
	GPUTime time.Duration `json:"gpu_time"`
}

// MaxReason is the longest hold reason, in characters: a line of the app,
// not a place to paste a log.
const MaxReason = 200
