package coretest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
)

const DaemonUID, NobodyUID = 1, 65534

// AsOther runs a shell script as uid in dir.
func AsOther(t *testing.T, uid int, dir, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Alive says whether the process runs (a process that ended is a zombie
// until waited for).
func Alive(cmd *exec.Cmd) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// IdleGPU is the simulated device with no made-up workload on it.
const IdleGPU = 3

func WaitStatus(t *testing.T, cmd *exec.Cmd, within time.Duration) syscall.WaitStatus {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-clock.Kernel.After(within):
		t.Fatalf("process %d still running after %s", cmd.Process.Pid, within)
	}
	return cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// AsUser runs cmd as uid (its primary group the same number), with no
// supplementary groups.
func AsUser(cmd *exec.Cmd, uid int) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
}

// NeedUserNamespaces skips the test where uid may not make a user
// namespace (kernel.unprivileged_userns_clone=0, no unshare).
func NeedUserNamespaces(t *testing.T, uid int) {
	t.Helper()
	probe := exec.Command("unshare", "-U", "true")
	AsUser(probe, uid)
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("uid %d may not make a user namespace here: %v %s", uid, err, out)
	}
}

// StartSleep starts `sleep 30` with extra environment and stops it when the
// test ends.
func StartSleep(t testing.TB, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), env...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// Start returns once exec has begun, a moment before the kernel fills in
	// the new command line and environment; wait for them.
	cmdline := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "cmdline")
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(cmdline)
		return err == nil && strings.HasPrefix(string(b), "sleep\x00")
	}, 5*time.Second, time.Millisecond)
	return cmd
}

// ExitedPID returns the pid of a child that has exited and been reaped.
func ExitedPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// FakeStat builds a stat line whose field 22 is start.
func FakeStat(pid int, comm string, start uint64) string {
	// Fields 3..21 are filler; field 22 is the start time.
	fields := []string{"S"}
	for i := 4; i <= 21; i++ {
		fields = append(fields, strconv.Itoa(i))
	}
	fields = append(fields, strconv.FormatUint(start, 10), "123456", "99")
	return strconv.Itoa(pid) + " (" + comm + ") " + strings.Join(fields, " ") + "\n"
}

// Hostile is text another user controls, made to act on a terminal: set
// the window title, clear the screen, a C1 CSI as a lone byte and as a
// character.
const Hostile = "\x1b]2;pwned\x07\x1b[2J\x9b2J\u009b2J"

// NoTerminalControl fails when out holds anything a terminal would obey:
// C0 controls but the newlines between lines, C1 controls, or bytes that are
// not UTF-8.
func NoTerminalControl(t *testing.T, out string) {
	t.Helper()
	require.True(t, utf8.ValidString(out), "bytes that are not UTF-8 reached the output: %q", out)
	for i, r := range out {
		bad := r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f
		require.False(t, bad, "%q reached the output at byte %d: %q", r, i, out)
	}
}
