package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
)

// In a terminal too small to draw in, the app shows no prompt, so keys
// other than q must not act: x then y releases nothing, n and enter book
// nothing. The real binary, in a real terminal that shrinks and grows.
func TestAppTooSmallActsOnlyOnQuit(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, chronos(t, db, "create", "0", "50%", "1h").code)
	env := []string{"CHRONOS_DB=" + db, "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2"}
	s := newTmux(t, 100, 30, env...)
	s.keys(chronosBin, "Enter")
	s.waitFor("Bookings (1)")

	s.run("resize-window", "-t", s.name, "-x", "60", "-y", "15")
	s.waitFor("Terminal too small: 60×15")
	s.keys("x", "y", "n", "5", "0", "%", "Enter", "e", "Enter")
	time.Sleep(500 * time.Millisecond) // what a key asks for is written within milliseconds
	parts := listJSON(t, db)
	require.Len(t, parts, 1, "nothing booked")
	require.Equal(t, domain.StatusLive, parts[0].State, "nothing released")
	require.InDelta(t, 3600, parts[0].RemainingSeconds, 30, "nothing extended")

	s.run("resize-window", "-t", s.name, "-x", "100", "-y", "30")
	scr := s.waitFor("Bookings (1)")
	require.NotContains(t, scr, "Release #", "no prompt left open")
	require.NotContains(t, scr, "New booking")

	s.run("resize-window", "-t", s.name, "-x", "60", "-y", "15")
	s.waitFor("Terminal too small")
	s.keys("q")
	require.Eventually(t, func() bool {
		return strings.TrimSpace(s.run("display-message", "-p", "-t", s.name, "#{alternate_on}")) == "0"
	}, patience, 50*time.Millisecond, "q quits")
}
