package main

import (
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/setup"
)

var (
	// member is nobody in the group daemon, the guarded ledger's group in
	// these tests, as a member's login is in the lab's group.
	member = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{1}}
	// daemonMember is daemon, another member.
	daemonMember = &syscall.Credential{Uid: 1, Gid: 1, Groups: []uint32{1}}
)

// guardedLab is a guarded ledger of the group daemon, made by root's
// init, and where its keeper listens.
type guardedLab struct {
	db, sock string
}

func newGuardedLab(t *testing.T) guardedLab {
	t.Helper()
	_, elsewhere := otherUserLedger(t) // skips unless root
	lab := guardedLab{db: filepath.Join(filepath.Dir(elsewhere), "lab", "chronos.db")}
	run, err := os.MkdirTemp("", "chronos-run-") // root's, as /run is
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(run) })
	require.NoError(t, os.Chmod(run, 0o755))
	lab.sock = filepath.Join(run, "chronos", "chronos.sock")
	r := lab.as(t, nil, "init", "--shared", "--guarded", "--group", "daemon")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Shared ledger ready at "+lab.db+" (group daemon, mode 0640, guarded: members write through root's monitor).\n",
		strings.SplitAfter(r.stdout, "\n")[0])
	return lab
}

// as runs the binary against the lab as cred (nil: root).
func (l guardedLab) as(t *testing.T, cred *syscall.Credential, args ...string) result {
	t.Helper()
	return runWith(t, chronosBin, l.db, cred, []string{"CHRONOS_SOCKET=" + l.sock}, 0, args...)
}

// startKeeper starts root's monitor, the keeper, in the environment env
// too, and returns once its socket answers; it is stopped when the test
// ends.
func (l guardedLab) startKeeper(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(chronosBin, "--monitor", "--sample-every", "100ms")
	cmd.Env = append(append(append(os.Environ(), binEnv(l.db)...), "CHRONOS_SOCKET="+l.sock), env...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.Process.Signal(syscall.SIGTERM) == nil {
			cmd.Wait()
			require.NoFileExists(t, l.sock, "the keeper left its socket behind")
		}
	})
	require.Eventually(t, func() bool {
		// Not just there: a keeper killed leaves its socket, which refuses.
		conn, err := net.Dial("unix", l.sock)
		if err == nil {
			conn.Close()
		}
		return err == nil
	}, patience, 10*time.Millisecond, "the keeper's socket")
	return cmd
}

// command is the binary run against the lab as cred, in env too, not yet
// started.
func (l guardedLab) command(cred *syscall.Credential, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(chronosBin, args...)
	cmd.Env = append(append(append(os.Environ(), binEnv(l.db)...), "CHRONOS_SOCKET="+l.sock, "HOME=/nonexistent"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	return cmd
}

// A guarded ledger is root's: members read it and cannot write it; with
// no keeper a member's write says so in one line and reads still work; a
// member's own monitor refuses to keep it.
func TestGuardedLedgerWithoutItsKeeper(t *testing.T) {
	t.Parallel()
	lab := newGuardedLab(t)
	st, err := os.Stat(lab.db)
	require.NoError(t, err)
	require.Equal(t, setup.GuardedFileMode, st.Mode().Perm())
	require.Equal(t, uint32(0), st.Sys().(*syscall.Stat_t).Uid)
	require.Equal(t, uint32(1), st.Sys().(*syscall.Stat_t).Gid, "daemon's")
	dir, err := os.Stat(filepath.Dir(lab.db))
	require.NoError(t, err)
	require.Equal(t, setup.GuardedDirMode, dir.Mode()&(fs.ModeType|fs.ModePerm|fs.ModeSetgid|fs.ModeSticky))

	// Opening the file for writing, as a modified chronos would.
	for _, open := range []string{"exec 3>>" + lab.db, "exec 3<>" + lab.db, "touch " + filepath.Join(filepath.Dir(lab.db), "planted")} {
		sh := exec.Command("sh", "-c", open)
		sh.SysProcAttr = &syscall.SysProcAttr{Credential: member}
		out, err := sh.CombinedOutput()
		require.Error(t, err, open)
		require.Contains(t, string(out), "Permission denied", open)
	}

	r := lab.as(t, member, "create", "0", "0.2", "1h")
	require.Equal(t, 1, r.code)
	require.Equal(t, "chronos: the keeper is not running: ask root to start chronos-monitor\n", r.stderr)
	r = lab.as(t, member, "release", "1")
	require.Equal(t, 1, r.code)
	require.Equal(t, "chronos: the keeper is not running: ask root to start chronos-monitor\n", r.stderr)
	r = lab.as(t, member, "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "No bookings.\n", r.stdout)

	r = lab.as(t, member, "--monitor")
	require.Equal(t, 1, r.code)
	require.Equal(t, "chronos: the ledger is guarded: only root's monitor keeps it: run it as root (sudo chronos --monitor, or the chronos-monitor unit);"+
		" members' apps and commands need no monitor of their own\n", r.stderr)
	require.NoFileExists(t, lab.sock)
}

// Through root's keeper a member books, extends and releases their own
// bookings, recorded as theirs, and cannot release another member's.
func TestGuardedWritesGoThroughTheKeeper(t *testing.T) {
	t.Parallel()
	lab := newGuardedLab(t)
	lab.startKeeper(t)
	st, err := os.Stat(lab.sock)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o660), st.Mode().Perm())
	require.Equal(t, uint32(1), st.Sys().(*syscall.Stat_t).Gid, "the group's")
	before, err := os.ReadFile(lab.db)
	require.NoError(t, err)

	r := lab.as(t, member, "create", "0", "0.2", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Booked 1: 20% (16.0 GiB) of GPU 0 for nobody")
	after, err := os.ReadFile(lab.db)
	require.NoError(t, err)
	require.NotEqual(t, before, after, "the keeper wrote the ledger")
	parts := listJSON(t, lab.db)
	require.Len(t, parts, 1)
	require.Equal(t, 65534, parts[0].UID)

	r = lab.as(t, daemonMember, "release", "1")
	require.Equal(t, 1, r.code)
	require.Equal(t, "chronos: not your booking: 1 belongs to nobody; only they or root may release it\n", r.stderr)
	r = lab.as(t, daemonMember, "create", "1", "0.5", "1h", "--user", "nobody")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "only root may do that")
	r = lab.as(t, member, "extend", "1", "10m")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "Extended 1 by 10m")
	r = lab.as(t, member, "create", "0", "0", "1h")
	require.Equal(t, 2, r.code, "bad input is still a usage error: %s", r.stderr)
	r = lab.as(t, member, "release", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "Released 1.\n", r.stdout)
	r = lab.as(t, member, "create", "any", "0.3", "1h", "--gpus", "2")
	require.Equal(t, 0, r.code, "a booking of several GPUs goes through the keeper whole: %s", r.stderr)
	require.Contains(t, r.stdout, "of GPU 0-1 for nobody")
	r = lab.as(t, member, "create", "0,1", "0.8", "1h")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "GPU 0 has 70%")

	r = lab.as(t, nil, "events")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `created +#1 by nobody: 20%`, r.stdout)
	require.Regexp(t, `extended +#1 by nobody`, r.stdout)
	require.Regexp(t, `released +#1 by nobody`, r.stdout)
	require.NotContains(t, r.stdout, "by daemon", "a refusal wrote nothing")
}

// A member's create --wait waits in line through the keeper, is booked
// when room comes, and leaves the line when its process is killed: the
// keeper sees its connection close.
func TestGuardedWaitThroughTheKeeper(t *testing.T) {
	t.Parallel()
	lab := newGuardedLab(t)
	lab.startKeeper(t)
	r := lab.as(t, nil, "create", "0", "1", "1h")
	require.Equal(t, 0, r.code, r.stderr)

	waitAs := func() *exec.Cmd { return lab.command(member, nil, "create", "0", "0.5", "1h", "--wait") }
	waiting := func(n int) func() bool {
		return func() bool {
			r := lab.as(t, nil, "queue", "--json")
			return r.code == 0 && strings.Count(r.stdout, `"position"`) == n
		}
	}
	killed := waitAs()
	require.NoError(t, killed.Start())
	require.Eventually(t, waiting(1), patience, 20*time.Millisecond, "the request joined the line")
	require.NoError(t, killed.Process.Kill())
	_ = killed.Wait()
	require.Eventually(t, waiting(0), patience, 20*time.Millisecond, "a killed waiter's request left the line")

	var out strings.Builder
	booked := waitAs()
	booked.Stdout = &out
	require.NoError(t, booked.Start())
	require.Eventually(t, waiting(1), patience, 20*time.Millisecond)
	r = lab.as(t, nil, "release", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, booked.Wait())
	require.Contains(t, out.String(), "Booked 2: 50% (40.0 GiB) of GPU 0 for nobody")
}
