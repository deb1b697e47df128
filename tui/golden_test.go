package tui

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"
)

// TestGolden runs the real program (Init, ticks, the ledger watch) at fixed
// sizes and compares the final screen with testdata/TestGolden/*.golden.
// The profile is NO_COLOR's, so the files show what is left without colour.
// Regenerate with: go test ./tui -run TestGolden -update
func TestGolden(t *testing.T) {
	lipgloss.SetColorProfile(termenv.Ascii)
	for _, tc := range []struct {
		width, height int
		keys          string
	}{
		{80, 24, ""},
		{140, 40, ""},
		{80, 24, "\t"},
		{140, 40, "\t"},
		{80, 24, "n"},
		{80, 24, "?"},
		{60, 15, ""},
	} {
		name := fmt.Sprintf("%dx%d", tc.width, tc.height)
		switch tc.keys {
		case "\t":
			name += "_processes"
		case "n":
			name += "_form"
		case "?":
			name += "_help"
		}
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, 4)
			w.seed()
			tm := teatest.NewTestModel(t, New(w.options()), teatest.WithInitialTermSize(tc.width, tc.height))
			teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
				return bytes.Contains(b, []byte("ending soon")) && bytes.Contains(b, []byte("/80.0 GiB")) ||
					bytes.Contains(b, []byte("too small"))
			}, teatest.WithDuration(5*time.Second))
			if tc.keys != "" {
				tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(tc.keys)})
				if tc.keys == "\t" {
					tm.Send(tea.KeyMsg{Type: tea.KeyTab})
				}
			}
			require.NoError(t, tm.Quit())
			final, ok := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
			require.True(t, ok)
			golden.RequireEqual(t, []byte(final.View()))
		})
	}
}
