package tui

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
)

// TestGolden runs the real program (Init, ticks, the ledger watch) at fixed
// sizes and compares the final screen with testdata/TestGolden/*.golden.
// The profile is NO_COLOR's, so the files show what is left without colour.
// Regenerate with: go test ./tui -run TestGolden -update
func TestGolden(t *testing.T) {
	if elsewhereThanUTC(t) {
		return
	}
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
			}, teatest.WithDuration(20*time.Second))
			if tc.keys != "" {
				tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(tc.keys)})
				if tc.keys == "\t" {
					tm.Send(tea.KeyMsg{Type: tea.KeyTab})
				}
			}
			require.NoError(t, tm.Quit())
			final, ok := tm.FinalModel(t, teatest.WithFinalTimeout(20*time.Second)).(*Model)
			require.True(t, ok)
			golden.RequireEqual(t, []byte(final.View()))
		})
	}
}

// TestGoldenHistory is the history of GPU 3 after an hour of a lab (see
// busyHour), with a notice to alice on its line, at the sizes the app must
// read at. Regenerate with: go test ./tui -run TestGoldenHistory -update
func TestGoldenHistory(t *testing.T) {
	if elsewhereThanUTC(t) {
		return
	}
	lipgloss.SetColorProfile(termenv.Ascii)
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			w := newWorld(t, 4)
			ids := w.busyHour()
			w.clock.Set(t0.Add(-2 * time.Minute))
			w.record(ids[0], domain.EventWarned, "ends in 5m (GPU 0)")
			w.clock.Set(t0)
			tm := teatest.NewTestModel(t, New(w.options()), teatest.WithInitialTermSize(size[0], size[1]))
			// Enter only once the bookings are in and carol's row is
			// selected: before that it opens another GPU's history.
			teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
				return bytes.Contains(b, []byte("ends in 5m")) && bytes.Contains(b, []byte("/80.0 GiB")) && carolSelected.Match(b)
			}, teatest.WithDuration(20*time.Second))
			tm.Send(tea.KeyMsg{Type: tea.KeyEnter}) // the first row: carol's, on GPU 3
			// Only the history draws idle minutes as a span: the table's
			// "idle 50m", perhaps not yet read, would let it quit early.
			teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("░ idle 50m ░")) },
				teatest.WithDuration(20*time.Second))
			require.NoError(t, tm.Quit())
			final, ok := tm.FinalModel(t, teatest.WithFinalTimeout(20*time.Second)).(*Model)
			require.True(t, ok)
			golden.RequireEqual(t, []byte(final.View()))
		})
	}
}

// carolSelected is the bookings table with its cursor on carol's row.
var carolSelected = regexp.MustCompile(`▸ #\d+ +carol `)

// TestGoldenIdle is the bookings of that hour (see busyHour): bob's and
// carol's rows say how long each has sat idle, at the sizes the app must
// read at. Regenerate with: go test ./tui -run TestGoldenIdle -update
func TestGoldenIdle(t *testing.T) {
	if elsewhereThanUTC(t) {
		return
	}
	lipgloss.SetColorProfile(termenv.Ascii)
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			w := newWorld(t, 4)
			w.busyHour()
			tm := teatest.NewTestModel(t, New(w.options()), teatest.WithInitialTermSize(size[0], size[1]))
			teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
				return bytes.Contains(b, []byte("idle 50m")) && bytes.Contains(b, []byte("/80.0 GiB"))
			}, teatest.WithDuration(20*time.Second))
			require.NoError(t, tm.Quit())
			final, ok := tm.FinalModel(t, teatest.WithFinalTimeout(20*time.Second)).(*Model)
			require.True(t, ok)
			golden.RequireEqual(t, []byte(final.View()))
		})
	}
}

// elsewhereThanUTC runs a golden test in UTC when the local zone is
// another, in a process of its own (TZ=UTC), and reports that it did: the
// caller then returns, passed or failed with that run. A golden file holds
// the times of day of t0, a UTC instant, as drawn in UTC; setting
// time.Local in this process would race with the runtime's timers.
func elsewhereThanUTC(t *testing.T) bool {
	t.Helper()
	if _, off := t0.Local().Zone(); off == 0 {
		return false
	}
	run := "^" + strings.ReplaceAll(regexp.QuoteMeta(t.Name()), "/", "$/^") + "$"
	cmd := exec.Command(os.Args[0], "-test.run", run, "-test.count=1")
	cmd.Env = append(os.Environ(), "TZ=UTC")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s, run again in UTC (the local zone is %s):\n%s", t.Name(), time.Local, out)
	require.NotContains(t, string(out), "no tests to run", "the run in UTC ran %s", t.Name())
	return true
}
