package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"
)

func TestBarsSpendOneEscapePerColour(t *testing.T) {
	prev := lipgloss.ColorProfile()
	lipgloss.SetColorProfile(termenv.ANSI)
	t.Cleanup(func() { lipgloss.SetColorProfile(prev) })
	st := DefaultStyles()
	resets := func(s string) int { return strings.Count(s, "\x1b[0m") }

	empty := bar(0, 10, &st.BarUsed, &st.BarEmpty)
	require.Equal(t, 1, resets(empty), "no escapes around an empty run: %q", empty)
	require.Equal(t, strings.Repeat("░", 10), ansi.Strip(empty))

	// Booked by one person, partly used, then free: two colours, two runs.
	segs := []segment{{user: "alice", share: 500_000}}
	mem := memoryBar(&st, 30, 100, segs, 10)
	require.Equal(t, "███▒▒░░░░░", ansi.Strip(mem))
	require.Equal(t, 2, resets(mem), "%q", mem)
}
