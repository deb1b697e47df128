package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ctrl-C, a hang-up and SIGTERM sent to `chronos run` go on to its
// command's process group, a second Ctrl-C as the first; the command
// decides when chronos ends, which exits with its status and releases the
// booking. (chronos once caught them only after it had started the command
// and recorded itself in the ledger: a Ctrl-C just after the start was
// lost.)
func TestRunPassesSignalsToItsCommand(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	log := filepath.Join(t.TempDir(), "log")
	cmd := waiterCmd(db, "run", "0", "0.2", "1h", "--", "sh", "-c",
		`for s in INT HUP; do trap "echo $s >> $0" $s; done; trap 'echo TERM >> "$0"; exit 7' TERM; echo ready >> "$0"; while :; do sleep 0.05; done`, log)
	said := saying(t, cmd)
	logSays := func(want string) {
		t.Helper()
		var got []byte
		ok := assert.Eventually(t, func() bool { got, _ = os.ReadFile(log); return string(got) == want }, patience, 10*time.Millisecond)
		require.True(t, ok, "the command's log: %q", got)
	}
	logSays("ready\n")
	want := "ready\n"
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM} {
		require.NoError(t, cmd.Process.Signal(sig))
		want += map[syscall.Signal]string{syscall.SIGINT: "INT\n", syscall.SIGHUP: "HUP\n", syscall.SIGTERM: "TERM\n"}[sig]
		logSays(want)
	}
	after := rest(said)
	var exit *exec.ExitError
	require.ErrorAs(t, cmd.Wait(), &exit)
	require.Equal(t, 7, exit.ExitCode(), after)
	require.Empty(t, listJSON(t, db), "the booking is released when the command ends")
}

// A hang-up while `run --at` waits for its booking's start ends the wait
// and releases the booking, saying why; the command never runs.
func TestRunAtLeavesOnHangUp(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	ran := filepath.Join(t.TempDir(), "ran")
	cmd := waiterCmd(db, "run", "0", "0.2", "1h", "--at", "+1h", "--", "touch", ran)
	said := saying(t, cmd)
	until(t, said, "booking 1 starts at")
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	after := rest(said)
	var exit *exec.ExitError
	require.ErrorAs(t, cmd.Wait(), &exit)
	require.Equal(t, 1, exit.ExitCode(), after)
	require.Contains(t, after, "stopped waiting for booking 1 to start: interrupted by SIGHUP")
	require.NoFileExists(t, ran)
	require.Empty(t, listJSON(t, db), "the booking is released")
}
