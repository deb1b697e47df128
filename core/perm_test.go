package core

import (
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// A per-user ledger lives in a 0700 directory under $XDG_STATE_HOME, and
// it and its backup are 0600, whatever the umask.
func TestPerUserLedgerModes(t *testing.T) {
	if _, err := os.Stat(setup.SharedDir); err == nil {
		t.Skipf("%s exists on this machine: the shared ledger would be chosen", setup.SharedDir)
	}
	state := t.TempDir()
	t.Setenv("CHRONOS_DB", "")
	t.Setenv("XDG_STATE_HOME", state)
	old := syscall.Umask(0o002)
	defer syscall.Umask(old)

	path, err := setup.LedgerPath("")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(state, "chronos", "chronos.db"), path)
	c := NewClient(Options{Ledger: bolt.New(path), Devices: testDevices, As: &coretest.Alice})
	_, err = c.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)

	for p, want := range map[string]fs.FileMode{
		filepath.Dir(path):       fs.ModeDir | 0o700,
		path:                     0o600,
		storage.BackupPath(path): 0o600,
	} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, want, st.Mode(), p)
	}
}

// `chronos init --shared` makes a setgid, sticky 3770 directory owned by
// root and the group, and the ledger in it (and its backup) 0660 in that
// group.
func TestInitSharedModes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the shared directory is owned by root")
	}
	var group *user.Group
	for _, name := range []string{"nogroup", "daemon", "nobody"} {
		if g, err := user.LookupGroup(name); err == nil {
			group = g
			break
		}
	}
	if group == nil {
		t.Skip("no nogroup, daemon or nobody group here")
	}
	gid, _ := strconv.Atoi(group.Gid)
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)

	dir := filepath.Join(t.TempDir(), "chronos")
	path, err := setup.InitShared(dir, group.Name)
	require.NoError(t, err)
	// Root writes first, as `init` does (and records the simulated GPUs,
	// which a member may not in a shared ledger); then a member books.
	require.NoError(t, NewClient(Options{Ledger: bolt.New(path), Devices: testDevices, As: &coretest.Root}).SaveInventory(simInventory(2, coretest.TestGPUMemory, time.Now())))
	c := NewClient(Options{Ledger: bolt.New(path), Devices: testDevices, As: &coretest.Alice})
	_, err = c.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)

	for p, want := range map[string]fs.FileMode{
		dir:                      setup.SharedDirMode,
		path:                     0o660,
		storage.BackupPath(path): 0o660,
	} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, want, st.Mode(), p)
		sys := st.Sys().(*syscall.Stat_t)
		require.Equal(t, gid, int(sys.Gid), "%s's group", p)
	}
	st, _ := os.Stat(dir)
	require.Equal(t, uint32(0), st.Sys().(*syscall.Stat_t).Uid)

	// Run again over an existing ledger: modes are put right.
	require.NoError(t, os.Chmod(path, 0o600))
	_, err = setup.InitShared(dir, group.Name)
	require.NoError(t, err)
	st, _ = os.Stat(path)
	require.Equal(t, fs.FileMode(0o660), st.Mode())
}
