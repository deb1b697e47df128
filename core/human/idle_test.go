package human

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
)

// How long a booking has been idle reads the same in show and list as in
// its JSON: under a minute is "<1m", not "0s" beside idle_seconds 54.7.
func TestIdleForReadsAsItsSeconds(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	p := domain.Partition{State: domain.Live, Start: now.Add(-time.Hour), Expires: now.Add(time.Hour)}
	for idle, want := range map[time.Duration]string{
		0: "", 54700 * time.Millisecond: IdleUnderAMinute, time.Minute: "1m", 5*time.Minute + 59*time.Second: "5m",
	} {
		u := domain.BookingUsage{Through: now.Add(-10 * time.Second), IdleFor: idle}
		require.Equal(t, want, FormatIdleFor(p, u, now), "%s", idle)
		require.Equal(t, idle, domain.IdleFor(p, u, now))
	}
	stale := domain.BookingUsage{Through: now.Add(-time.Hour), IdleFor: time.Hour}
	require.Empty(t, FormatIdleFor(p, stale, now), "no monitor has watched it lately")
}
