package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// list --watch in a terminal redraws in place on the alternate screen,
// shows other people's changes, and on Ctrl-C leaves the terminal as it
// found it: the shell's screen back, the cursor shown, status 0.
func TestWatchRedrawsAndLeavesTheTerminalClean(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	s := newTmux(t, 100, 20, "CHRONOS_DB="+db, "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2", "GOCOVERDIR="+coverDir, "PS1=$ ")
	s.keys("echo before-watch", "Enter")
	s.keys(chronosBin+" list --watch 0.5; echo status=$?", "Enter")
	s.waitFor("Every 500ms: chronos list")
	require.Equal(t, "1", s.format("#{alternate_on}"))
	require.Equal(t, "0", s.format("#{cursor_flag}"), "the cursor is hidden while it draws")
	require.NotContains(t, s.screen(), "before-watch", "drawn on a screen of its own")

	require.Equal(t, 0, cli(t, db, "create", "1", "0.5", "1h").code)
	scr := s.waitFor("40.0 GiB")
	require.Equal(t, 1, strings.Count(scr, "Every 500ms"), "redrawn in place, not scrolled")

	s.keys("C-c")
	s.waitFor("status=0")
	require.Equal(t, "0", s.format("#{alternate_on}"))
	require.Equal(t, "1", s.format("#{cursor_flag}"))
	scr = s.screen()
	require.Contains(t, scr, "before-watch", "the shell's screen is back")
	require.NotContains(t, scr, "Every 500ms")
	require.NotContains(t, scr, "\x1b")
}

// stats --watch N draws too, cut to a small window.
func TestStatsWatchFitsTheWindow(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	s := newTmux(t, 40, 8, "CHRONOS_DB="+db, "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2", "GOCOVERDIR="+coverDir, "PS1=$ ")
	s.keys(chronosBin+" stats --watch 1s; echo status=$?", "Enter")
	scr := s.waitFor("Every 1s: chronos stats")
	lines := strings.Split(strings.TrimRight(scr, "\n"), "\n")
	require.LessOrEqual(t, len(lines), 8)
	for _, l := range lines {
		require.LessOrEqual(t, len([]rune(l)), 40, l)
	}
	s.keys("C-c")
	s.waitFor("status=0")
}

// Without a terminal, --watch prints frame after frame, with no escape
// sequences, and stops cleanly on SIGINT.
func TestWatchWithoutATerminal(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "0", "0.5", "1h").code)
	cmd := exec.Command(chronosBin, "list", "-w", "300ms")
	cmd.Env = append(os.Environ(), binEnv(db)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Two frames, then SIGINT (not after a fixed time: a loaded machine
	// may not have drawn them yet).
	var out strings.Builder
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		out.WriteString(lines.Text() + "\n")
		if strings.Count(out.String(), "Every 300ms: chronos list") >= 2 && strings.Count(out.String(), "40.0 GiB") >= 2 {
			break
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	rest, err := io.ReadAll(stdout)
	require.NoError(t, err)
	out.Write(rest)
	require.NoError(t, cmd.Wait(), errb.String())
	require.GreaterOrEqual(t, strings.Count(out.String(), "Every 300ms: chronos list"), 2)
	require.GreaterOrEqual(t, strings.Count(out.String(), "40.0 GiB"), 2)
	require.NotContains(t, out.String(), "\x1b")
}

// The interval is checked like any duration.
func TestWatchIntervalIsChecked(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	for args, msg := range map[string]string{
		"list --watch=soon":  `--watch "soon": not seconds (2) or a duration (500ms, 5s, 1m) (see chronos list --help)`,
		"list --watch=0.01":  `--watch "0.01": more often than every 100ms`,
		"list --watch=2h":    "use cron",
		"stats --watch 5s x": `no arguments expected, got "5s"`,
		"list --watch 10ms":  `--watch "10ms": more often than every 100ms`,
		"stats --watch abc":  `--watch "abc": not seconds (2) or a duration (500ms, 5s, 1m)`,
	} {
		r := cli(t, db, strings.Fields(args)...)
		require.Equal(t, exitUsage, r.code, args)
		require.Contains(t, r.stderr, msg, args)
	}
}
