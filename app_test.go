package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tmuxSession drives the real binary in a real terminal: tmux gives it a
// pty, send-keys types, capture-pane reads the screen.
type tmuxSession struct {
	t      *testing.T
	socket string
	name   string
}

func newTmux(t *testing.T, width, height int, env ...string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (make test installs it)")
	}
	s := &tmuxSession{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock"), name: "chronos"}
	args := []string{"new-session", "-d", "-s", s.name, "-x", strconv.Itoa(width), "-y", strconv.Itoa(height)}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	args = append(args, "sh")
	s.run(args...)
	t.Cleanup(func() { exec.Command("tmux", "-S", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	require.NoError(s.t, err, "tmux %v: %s", args, out)
	return string(out)
}

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	for _, k := range keys {
		s.run("send-keys", "-t", s.name, k)
		time.Sleep(60 * time.Millisecond)
	}
}

func (s *tmuxSession) screen() string { return s.run("capture-pane", "-p", "-t", s.name) }

// format is a tmux format of the pane, such as #{alternate_on}.
func (s *tmuxSession) format(f string) string {
	return strings.TrimSpace(s.run("display-message", "-p", "-t", s.name, f))
}

// waitFor polls the screen until it contains want, for as long as
// patience allows.
func (s *tmuxSession) waitFor(want string) string {
	s.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		scr := s.screen()
		if strings.Contains(scr, want) {
			return scr
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("screen never showed %q; it shows:\n%s", want, scr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAppEndToEnd(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	env := []string{"CHRONOS_DB=" + db, "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2", "GOCOVERDIR=" + coverDir, "PS1=$ "}
	s := newTmux(t, 100, 30, env...)
	s.keys(chronosBin, "Enter")
	s.waitFor("SIMULATED GPUs")
	s.waitFor("Bookings (0)")
	// The form needs the first reading of the GPUs, which comes on its own
	// time (a loaded machine, a race-detector build): wait until it shows.
	s.waitFor("GPU 1  Simulated")

	// Book with the form: n, memory 25%, enter (GPU and duration defaults).
	s.keys("n")
	s.waitFor("New booking")
	s.keys("2", "5", "%", "Enter")
	s.waitFor("Bookings (1)")
	parts := listJSON(t, db)
	require.Len(t, parts, 1)
	require.InDelta(t, 0.25, parts[0].Share, 1e-9)
	require.InDelta(t, 3600, parts[0].RemainingSeconds, 10)

	// A booking made by another process appears within a second.
	require.Equal(t, 0, chronos(t, db, "create", "1", "0.4", "2h").code)
	start := time.Now()
	s.waitFor("Bookings (2)")
	require.Less(t, time.Since(start), 1500*time.Millisecond)

	// Release the first row (the one ending first: ours, from the form).
	s.keys("g", "x")
	s.waitFor("Release #1")
	s.keys("y")
	require.Eventually(t, func() bool { return len(listJSON(t, db)) == 1 }, patience, 50*time.Millisecond)
	require.Equal(t, uint64(2), listJSON(t, db)[0].ID)

	// Quit: the app leaves the alternate screen and the shell is back.
	s.keys("q")
	require.Eventually(t, func() bool {
		return strings.TrimSpace(s.run("display-message", "-p", "-t", s.name, "#{alternate_on}")) == "0"
	}, patience, 50*time.Millisecond)
	scr := s.screen()
	require.NotContains(t, scr, "Bookings (")
	require.Contains(t, scr, chronosBin)
}

// Without a terminal the app refuses clearly instead of drawing garbage.
func TestAppNeedsATerminal(t *testing.T) {
	t.Parallel()
	r := chronos(t, filepath.Join(t.TempDir(), "c.db"))
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "needs a terminal")
}

// The app on a damaged ledger says so, and where to turn.
func TestAppOnDamagedLedger(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.NoError(t, os.WriteFile(db, []byte("not a database at all, just some words\n"), 0o600))
	s := newTmux(t, 100, 30, "CHRONOS_DB="+db, "CHRONOS_BACKEND=sim", "GOCOVERDIR="+coverDir, "PS1=$ ")
	s.keys(chronosBin+"; echo exit=$?", "Enter")
	scr := s.waitFor("exit=1")
	require.Contains(t, scr, "damaged")
	require.Contains(t, scr, "`chronos doctor` says what is wrong")
	require.NotContains(t, scr, `\x0a`)
}

// The app's --log is opened as the ledger is: a FIFO there (which would
// block the open for ever) or a symbolic link is refused, with the reason.
func TestAppLogMustBeARegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(filepath.Join(dir, "elsewhere"), link))
	for log, why := range map[string]string{fifo: "a FIFO or socket", link: "a symbolic link"} {
		s := newTmux(t, 120, 30, "CHRONOS_DB="+filepath.Join(dir, "c.db"), "CHRONOS_BACKEND=sim", "GOCOVERDIR="+coverDir, "PS1=$ ")
		s.keys(chronosBin+" --log "+log+"; echo exit=$?", "Enter")
		scr := s.waitFor("exit=1")
		require.Contains(t, scr, "open log: "+log+" is not a regular file ("+why+")")
	}
	_, err := os.Lstat(filepath.Join(dir, "elsewhere"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing is created through the link")
}

// An app whose terminal goes away ends, even when it was started with
// SIGHUP ignored (nohup, some runuser set-ups): a newcomer found such apps
// running on unseen after their tmux session was killed, keeping their
// requests in line.
func TestAppEndsWhenItsTerminalHangsUp(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	s := newTmux(t, 100, 30, "CHRONOS_DB="+db, "CHRONOS_BACKEND=sim", "GOCOVERDIR="+coverDir)
	s.keys("trap '' HUP; exec "+chronosBin, "Enter")
	s.waitFor("SIMULATED GPUs")
	pid, err := strconv.Atoi(s.format("#{pane_pid}"))
	require.NoError(t, err)
	s.run("kill-session", "-t", s.name)
	require.Eventually(t, func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(stat), ") Z ")
	}, patience, 50*time.Millisecond, "the app outlived its terminal")
}

// waitInBackground books 50% of GPU 0 in the app on s, waits in line for
// it, and quits with b: the request keeps waiting in the background. It
// returns that waiter's pid and log (the pid killed when the test ends).
func waitInBackground(t *testing.T, s *tmuxSession) (pid int, log string) {
	t.Helper()
	s.keys("n")
	s.waitFor("New booking")
	s.keys("Up", "0", "Down", "5", "0", "%", "Enter")
	s.waitFor("enter waits in line")
	s.keys("Enter")
	s.waitFor("Queue (1)")

	s.keys("q")
	s.waitFor("[b] keep waiting in the background")
	s.keys("b")
	scr := s.waitFor("(chronos queue shows where it stands")
	m := regexp.MustCompile(`Request #1 keeps waiting in the background: pid (\d+), log (\S+)`).FindStringSubmatch(strings.Join(strings.Fields(scr), " "))
	require.NotNil(t, m, scr)
	pid, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid, m[2]
}
