package core

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage"
)

// asMember runs a shell script as nobody (in nogroup) in dir.
func asMember(t *testing.T, dir, script string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// within fails the test when fn has not returned after d: a hang.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s hung (still running after %s)", what, d)
	}
}

// Running `init --shared` again, after a member put links at the ledger's
// and the backup's names, changes neither what the links point at: init
// refuses them and says so. The directory becomes sticky, so members can no
// longer rename or remove root's files.
func TestInitSharedNeverFollowsLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: init is root's")
	}
	parent, err := os.MkdirTemp("", "chronos-init-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(parent) })
	require.NoError(t, os.Chmod(parent, 0o755))
	dir := filepath.Join(parent, "chronos")
	victim := filepath.Join(parent, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("root's\n"), 0o600))
	path, err := InitShared(dir, "nogroup")
	require.NoError(t, err)
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, SharedDirMode, st.Mode())

	for _, name := range []string{filepath.Base(path), filepath.Base(storage.BackupPath(path))} {
		out, err := asMember(t, dir, "ln -s "+victim+" "+name)
		require.NoError(t, err, out)
		_, err = InitShared(dir, "nogroup")
		require.ErrorContains(t, err, "symbolic link")
		st, err := os.Stat(victim)
		require.NoError(t, err)
		require.Equal(t, fs.FileMode(0o600), st.Mode(), "init changed the mode of the file a link pointed at")
		require.Equal(t, uint32(0), st.Sys().(*syscall.Stat_t).Gid, "init changed the group of the file a link pointed at")
		require.NoError(t, os.Remove(filepath.Join(dir, name)))
	}

	// Once root wrote the ledger, a member can neither replace nor remove it.
	c := NewClient(Options{Ledger: storage.New(path), Devices: testDevices, As: &root})
	_, err = c.Create(Request{Device: 0, Memory: Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)
	out, err := asMember(t, dir, "cp chronos.db mine && mv -f mine chronos.db")
	require.Error(t, err, out)
	out, err = asMember(t, dir, "rm -f chronos.db")
	require.Error(t, err, out)
	require.FileExists(t, path)
}

// A member swapping a FIFO with the ledger in a loop (renameat2 with
// RENAME_EXCHANGE, in a directory where they may rename it: the sticky
// shared directory forbids that, older ones did not) makes no reader, no
// monitor and no repair hang: opening never blocks, and what is not a
// regular file is refused. The monitor expires a booking meanwhile.
func TestFIFOSwapLoopHangsNothing(t *testing.T) {
	dir, bin := otherUserDir(t)
	db := filepath.Join(dir, "chronos.db")
	c := clientAt(db, nil, root)
	p, err := c.Create(Request{Device: 0, Memory: Fraction(0.1), Duration: 2 * time.Second})
	require.NoError(t, err)
	for range 5 {
		_, err := c.Create(Request{Device: 1, Memory: Fraction(0.1), Duration: time.Hour})
		require.NoError(t, err)
	}

	swap := exec.Command(bin, "-test.run=^$")
	swap.Env = append(os.Environ(), "CHRONOS_TEST_ROLE=swap", "CHRONOS_TEST_ARG="+db)
	swap.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	swap.Stderr = os.Stderr
	require.NoError(t, swap.Start())
	t.Cleanup(func() { swap.Process.Kill(); swap.Wait() })

	quick := NewClient(Options{Ledger: &storage.Ledger{Path: db, Timeout: time.Second}, Devices: testDevices, As: &root})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); NewMonitor(quick, MonitorOptions{}).Run(ctx) }()

	listed := 0
	for range 40 {
		within(t, 10*time.Second, "list", func() {
			if _, err := quick.List(false); err == nil {
				listed++
			}
		})
	}
	require.NotZero(t, listed, "no list got through")
	require.Eventually(t, func() bool {
		got, err := quick.Get(p.ID)
		return err == nil && got.State == storage.Expired
	}, 20*time.Second, 50*time.Millisecond, "the monitor never expired the booking")
	cancel()
	within(t, 10*time.Second, "the monitor's stop", func() { <-stopped })
	for range 5 {
		within(t, 10*time.Second, "doctor", func() { _, _ = quick.Ledger().(*storage.Ledger).Diagnose() })
	}
	within(t, 10*time.Second, "doctor --repair", func() { _, _ = quick.Ledger().(*storage.Ledger).Repair() })
}
