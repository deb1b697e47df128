package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
)

// openDir is a directory of the test's that every uid may write.
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "chronos-open-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o777))
	return dir
}

// pidIn waits for the pid a command writes to file.
func pidIn(t *testing.T, file string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(file)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}, patience, 20*time.Millisecond, "the command's pid in %s", file)
	return pid
}

// A member's chronos run goes through root's keeper: the command runs with
// its GPU visible and the booking is released when it ends; killed, the
// run leaves its booking to the keeper, which knows its process from the
// kernel: orphaned while the command runs, released once nothing of it
// does; at the deadline the run stops its command, and the signal is in
// the audit trail as the member's.
func TestGuardedRunThroughTheKeeper(t *testing.T) {
	t.Parallel()
	lab := newGuardedLab(t)
	open := openDir(t)
	shift := newShiftFile(t, open)
	lab.startKeeper(t, shift.Env()...)
	env := append([]string{"CHRONOS_SOCKET=" + lab.sock}, shift.Env()...)

	r := runWith(t, chronosBin, lab.db, member, env, 0, "run", "1", "0.5", "1h", "--", "sh", "-c",
		`echo "visible=$CUDA_VISIBLE_DEVICES booking=$CHRONOS_BOOKING_ID uid=$(id -u)"; exit 3`)
	require.Equal(t, 3, r.code, "the command's status: %s", r.stderr)
	require.Equal(t, "visible=1 booking=1 uid=65534\n", r.stdout)
	require.Contains(t, r.stderr, "chronos: booked 1: 50% (40.0 GiB) of GPU 1 until")
	parts := listJSON(t, lab.db, "--all")
	require.Len(t, parts, 1)
	require.Equal(t, domain.StatusReleased, parts[0].State, "released when the command ended")
	require.Equal(t, 65534, parts[0].UID)

	// Killed while its command runs.
	mark := filepath.Join(open, "started")
	run := lab.command(member, shift.Env(), "run", "0", "0.3", "1h", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 600`, mark)
	require.NoError(t, run.Start())
	t.Cleanup(func() { run.Process.Kill(); run.Wait() })
	child := pidIn(t, mark)
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	require.Eventually(t, func() bool {
		r := lab.as(t, member, "show", "2")
		return r.code == 0 && strings.Contains(r.stdout, "chronos run, pid "+strconv.Itoa(run.Process.Pid)+" on ")
	}, patience, 20*time.Millisecond, "the keeper recorded the member's run, named by the kernel")
	killed := run.Process.Pid
	require.NoError(t, run.Process.Signal(syscall.SIGKILL))
	require.Error(t, run.Wait())
	require.Eventually(t, func() bool {
		parts := listJSON(t, lab.db)
		return len(parts) == 1 && parts[0].State == domain.StatusOrphaned
	}, patience, 50*time.Millisecond, "its command still runs: orphaned, not released")
	require.NoError(t, syscall.Kill(child, syscall.SIGKILL))
	require.Eventually(t, func() bool { return len(listJSON(t, lab.db)) == 0 }, patience, 50*time.Millisecond, "released by the keeper")

	// Stopped at its deadline.
	ready := filepath.Join(open, "ready")
	var out strings.Builder
	run = lab.command(member, shift.Env(), "run", "0", "0.2", "1m", "--grace", "5s", "--", "sh", "-c",
		`trap 'exit 3' TERM; echo $$ > "$0"; while :; do sleep 0.05; done`, ready)
	run.Stderr = &out
	require.NoError(t, run.Start())
	pidIn(t, ready)
	shift.Advance(2 * time.Minute)
	err := run.Wait()
	require.Equal(t, 124, run.ProcessState.ExitCode(), "%v: %s", err, out.String())
	require.Contains(t, out.String(), "chronos: booking 3 ended: sent SIGTERM (SIGKILL in 5s)")
	r = runWith(t, chronosBin, lab.db, nil, env, 0, "events")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `created +#1 by nobody`, r.stdout)
	require.Regexp(t, `released +#1 by nobody`, r.stdout)
	require.Regexp(t, `released +#2 by root: its chronos run \(pid `+strconv.Itoa(killed)+` on \S+\) is gone and nothing of its command runs any more`, r.stdout)
	require.Regexp(t, `signalled +#3 nobody's pid \d+: SIGTERM to sh \(process group\): booking #3 ended \(recorded by nobody\)`, r.stdout)
}
