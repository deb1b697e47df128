package core

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// Running `init --shared` again, after a member put links at the ledger's
// and the backup's names, changes neither what the links point at: init
// refuses them and says so. The directory becomes sticky, so members can no
// longer rename or remove root's files.
func TestInitSharedNeverFollowsLinks(t *testing.T) {
	t.Parallel()
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
	path, err := setup.InitShared(dir, "nogroup")
	require.NoError(t, err)
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, setup.SharedDirMode, st.Mode())

	for _, name := range []string{filepath.Base(path), filepath.Base(storage.BackupPath(path))} {
		out, err := coretest.AsOther(t, coretest.NobodyUID, dir, "ln -s "+victim+" "+name)
		require.NoError(t, err, out)
		_, err = setup.InitShared(dir, "nogroup")
		require.ErrorContains(t, err, "symbolic link")
		st, err := os.Stat(victim)
		require.NoError(t, err)
		require.Equal(t, fs.FileMode(0o600), st.Mode(), "init changed the mode of the file a link pointed at")
		require.Equal(t, uint32(0), st.Sys().(*syscall.Stat_t).Gid, "init changed the group of the file a link pointed at")
		require.NoError(t, os.Remove(filepath.Join(dir, name)))
	}

	// Once root wrote the ledger, a member can neither replace nor remove it.
	c := NewClient(Options{Ledger: bolt.New(path), Devices: testDevices, As: &coretest.Root})
	_, err = c.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)
	out, err := coretest.AsOther(t, coretest.NobodyUID, dir, "cp chronos.db mine && mv -f mine chronos.db")
	require.Error(t, err, out)
	out, err = coretest.AsOther(t, coretest.NobodyUID, dir, "rm -f chronos.db")
	require.Error(t, err, out)
	require.FileExists(t, path)
}

// In the sticky shared directory a member may not replace root's backup:
// their writes refresh it in place instead, so the backup keeps up with
// members' bookings and stays root's.
func TestMembersWritesRefreshRootsBackup(t *testing.T) {
	t.Parallel()
	dir, bin := coretest.OtherUserDir(t)
	path, err := setup.InitShared(filepath.Join(dir, "shared"), "nogroup")
	require.NoError(t, err)
	admin := NewClient(Options{Ledger: bolt.New(path), Devices: testDevices, As: &coretest.Root})
	require.NoError(t, admin.SaveInventory(simInventory(2, coretest.TestGPUMemory, clock.System().Now())))
	backup := storage.BackupPath(path)
	require.FileExists(t, backup)
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(backup, old, old)) // a refresh is due

	book := exec.Command(bin, "-test.run=^$")
	book.Env = coretest.RoleEnv("CHRONOS_TEST_ROLE=book", "CHRONOS_TEST_DB="+path)
	book.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: coretest.NobodyUID, Gid: coretest.NobodyUID}}
	book.Stderr = os.Stderr
	require.NoError(t, book.Run())

	st, err := os.Stat(backup)
	require.NoError(t, err)
	require.True(t, st.ModTime().After(old.Add(time.Minute)), "the member's write did not refresh the backup")
	require.Equal(t, uint32(0), st.Sys().(*syscall.Stat_t).Uid, "the backup is still root's")
	require.Equal(t, fs.FileMode(0o660), st.Mode())
	copyOf := NewClient(Options{Ledger: &bolt.Ledger{Path: backup}, As: &coretest.Root})
	parts, err := copyOf.List(false)
	require.NoError(t, err)
	require.Len(t, parts, 1)
	require.Equal(t, "nobody", parts[0].User)
}
