package human

import (
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
