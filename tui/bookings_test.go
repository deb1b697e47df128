package tui

import (
	"fmt"
	"strings"

	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

// A booking the ledger records as idle says so on its row, as list's IDLE
// column does; one that works, or has ended, does not. At 80 columns too.
func TestBookingsShowIdle(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 4)
	ids := w.busyHour()
	parts, err := w.client.List(false)
	require.NoError(t, err)
	idle := map[uint64]string{}
	for _, p := range parts {
		idle[p.ID] = human.FormatIdle(p.Partition, p.Usage, t0)
	}
	require.Equal(t, "50m", idle[ids[1]], "the ledger has bob's booking idle for 50 minutes")
	require.Equal(t, "-", idle[ids[0]], "and alice's working")

	for _, width := range []int{80, 120} {
		m := w.model(width, 24)
		v := ansi.Strip(m.View())
		for _, id := range ids[:3] { // dave's ended long ago and is not shown
			row := lineWith(t, v, fmt.Sprintf("#%d ", id))
			if idle[id] == "-" {
				require.Contains(t, row, string(domain.StatusLive), "at %d columns", width)
				require.NotContains(t, row, "idle", "at %d columns", width)
			} else {
				require.Contains(t, row, "idle "+idle[id], "at %d columns", width)
			}
		}
		require.Contains(t, lineWith(t, v, fmt.Sprintf("#%d ", ids[1])), "idle 50m")
		for _, l := range strings.Split(v, "\n") {
			require.LessOrEqual(t, ansi.StringWidth(l), width)
		}
	}
}
