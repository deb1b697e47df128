package gpus

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/tui/widget"
)

func TestBarsSpendOneEscapePerColour(t *testing.T) {
	prev := lipgloss.ColorProfile()
	lipgloss.SetColorProfile(termenv.ANSI)
	t.Cleanup(func() { lipgloss.SetColorProfile(prev) })
	st := widget.DefaultStyles()
	resets := func(s string) int { return strings.Count(s, "\x1b[0m") }

	empty := widget.Bar(0, 10, &st.BarUsed, &st.BarEmpty)
	require.Equal(t, 1, resets(empty), "no escapes around an empty run: %q", empty)
	require.Equal(t, strings.Repeat("░", 10), ansi.Strip(empty))

	// Booked by one person, partly used, then free: two colours, two runs.
	segs := []Segment{{user: "alice", share: 500_000}}
	mem := memoryBar(&st, 30, 100, segs, 10)
	require.Equal(t, "███▒▒░░░░░", ansi.Strip(mem))
	require.Equal(t, 2, resets(mem), "%q", mem)
}

// Another user's unbooked memory is drawn in the colour of memory no
// booking holds, never in the colour of the booking whose run it would
// otherwise fall in: the run stays "▒" while its owner's processes use
// nothing. The owner's own use fills their run; use beyond the share, and
// unbooked use that no longer fits after the runs, take the runs' unused
// tails in the unbooked colour.
func TestMemoryBarKeepsUnbookedUseOutOfOwnersColours(t *testing.T) {
	prev := lipgloss.ColorProfile()
	lipgloss.SetColorProfile(termenv.ANSI)
	t.Cleanup(func() { lipgloss.SetColorProfile(prev) })
	st := widget.DefaultStyles()
	alice := st.Owner("alice").Render("x")
	aliceColour := alice[:strings.Index(alice, "x")]
	hot := st.BarHot.Render("x")
	hotColour := hot[:strings.Index(hot, "x")]

	// alice booked half and uses nothing; carol's unbooked process uses 30%.
	parts := []core.Partition{{Partition: domain.Partition{ID: 1, Device: 0, User: "alice", UID: 1, SharePPM: 500_000,
		State: domain.Live, Start: t0.Add(-time.Hour), Expires: t0.Add(time.Hour)}}}
	attrs := []admission.Attribution{{Device: 0, Process: gpu.Process{User: "carol", MemoryUsed: 30}, Verdict: admission.Unbooked}}
	segs := BookedSegments(parts, attrs, true, t0)[0]
	mem := memoryBar(&st, 30, 100, segs, 10)
	require.Equal(t, "▒▒▒▒▒███░░", ansi.Strip(mem))
	require.Contains(t, mem, aliceColour+"▒▒▒▒▒", "alice's run is booked, not used")
	require.Contains(t, mem, hotColour+"███", "carol's use has the unbooked colour")
	require.NotContains(t, mem, aliceColour+"█")

	// alice's own process uses 20%: her run fills that far.
	attrs = append(attrs, admission.Attribution{Device: 0, Process: gpu.Process{User: "alice", MemoryUsed: 20}, Partition: 1, Verdict: admission.Booked})
	segs = BookedSegments(parts, attrs, true, t0)[0]
	mem = memoryBar(&st, 50, 100, segs, 10)
	require.Equal(t, "██▒▒▒███░░", ansi.Strip(mem))
	require.Contains(t, mem, aliceColour+"██▒▒▒")

	// Unbooked use larger than the room after the runs spills over the
	// run's unused tail, still in the unbooked colour.
	attrs[0].MemoryUsed = 70
	segs = BookedSegments(parts, attrs, true, t0)[0]
	mem = memoryBar(&st, 90, 100, segs, 10)
	require.Equal(t, "██▒███████", ansi.Strip(mem))
	require.Contains(t, mem, aliceColour+"██▒\x1b[0m"+hotColour+"██", "two cells of alice's tail hold carol's use")
}
