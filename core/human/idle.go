package human

import (
	"cmp"
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
)

// IdleUnderAMinute is FormatIdleFor's word for a booking idle for less
// than a minute (it said "0s", while the JSON said 54.7 seconds).
const IdleUnderAMinute = "<1m"

// FormatIdleFor is how long a booking has been idle as of now, to the
// minute (IdleUnderAMinute before the first): "" while it works.
func FormatIdleFor(p domain.Partition, u domain.BookingUsage, now time.Time) string {
	switch d := domain.IdleFor(p, u, now); {
	case d <= 0:
		return ""
	case d < time.Minute:
		return IdleUnderAMinute
	default:
		return FormatDuration(d.Truncate(time.Minute))
	}
}

// FormatIdle is a booking's IDLE cell: "-" while it works, else how long
// it has been idle, and "held" while a hold exempts it.
func FormatIdle(p domain.Partition, u domain.BookingUsage, now time.Time) string {
	s := cmp.Or(FormatIdleFor(p, u, now), "-")
	if p.LiveAt(now) && u.HeldUntil.After(now) {
		s += fmt.Sprintf(" (held %s)", FormatDuration(u.HeldUntil.Sub(now).Round(time.Minute)))
	}
	return s
}
