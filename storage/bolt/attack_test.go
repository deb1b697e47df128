package bolt

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage"
)

// The uid and group of the member in these tests: nobody, in nogroup.
const memberUID, memberGID = 65534, 65534

// sharedSetup is a shared ledger directory as `chronos init --shared` makes
// it (root:nogroup, setgid and sticky, 3770) inside a directory everyone may
// enter, and beside it a file of root's that no member may change.
type sharedSetup struct {
	dir, victim string
	victimData  []byte
}

func newShared(t *testing.T) sharedSetup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: a root process against a member of the group")
	}
	parent, err := os.MkdirTemp("", "chronos-shared-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(parent) })
	require.NoError(t, os.Chmod(parent, 0o755))
	s := sharedSetup{dir: filepath.Join(parent, "chronos"), victim: filepath.Join(parent, "victim"), victimData: []byte("root's own file\n")}
	require.NoError(t, os.Mkdir(s.dir, 0o700))
	require.NoError(t, storage.Own(s.dir, 0, memberGID, 0o770|fs.ModeSetgid|fs.ModeSticky))
	require.NoError(t, os.WriteFile(s.victim, s.victimData, 0o644))
	return s
}

// ledger is the shared ledger, written once by root (as `init` does).
func (s sharedSetup) ledger(t *testing.T) *Ledger {
	t.Helper()
	l := New(filepath.Join(s.dir, "chronos.db"))
	l.BackupEvery = time.Nanosecond // every write refreshes the backup
	addOne(t, l)
	return l
}

// member runs a shell script as nobody in the shared directory.
func (s sharedSetup) member(t *testing.T, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "VICTIM=" + s.victim}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: memberUID, Gid: memberGID}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// startMember runs a script as nobody until the test ends.
func (s sharedSetup) startMember(t *testing.T, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "VICTIM=" + s.victim}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: memberUID, Gid: memberGID}, Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
}

// untouched checks that root's file outside the directory is as it was:
// same bytes, mode and owner.
func (s sharedSetup) untouched(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(s.victim)
	require.NoError(t, err)
	require.Equal(t, s.victimData, data, "root wrote a file a member pointed it at")
	st, err := os.Stat(s.victim)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o644), st.Mode(), "root changed the mode of a file a member pointed it at")
	uid, gid, _ := storage.OwnerOf(st)
	require.Equal(t, []int{0, 0}, []int{uid, gid}, "root changed the owner of a file a member pointed it at")
}

// A member's links at the names root writes — the backup's temporary file,
// the ledger itself before it exists — never make root write anywhere else.
func TestMemberLinksNeverRedirectRootsWrites(t *testing.T) {
	t.Parallel()
	t.Run("backup temporary file", func(t *testing.T) {
		s := newShared(t)
		l := s.ledger(t)
		out, err := s.member(t, `ln -s "$VICTIM" chronos.db.backup.tmp`)
		require.NoError(t, err, out)
		// Nor can the member put a ledger of their own in place of root's.
		out, err = s.member(t, `cp chronos.db mine && chmod 666 mine && mv -f mine chronos.db`)
		require.Error(t, err, "a member replaced root's ledger: %s", out)
		require.Contains(t, out, "not permitted")

		addOne(t, l) // root writes, and refreshes the backup
		s.untouched(t)
		st, err := os.Lstat(storage.BackupPath(l.Path))
		require.NoError(t, err)
		require.True(t, st.Mode().IsRegular())
	})

	t.Run("ledger is a dangling link", func(t *testing.T) {
		s := newShared(t)
		target := filepath.Join(filepath.Dir(s.dir), "planted.db")
		out, err := s.member(t, `ln -s `+target+` chronos.db`)
		require.NoError(t, err, out)
		l := New(filepath.Join(s.dir, "chronos.db"))
		err = l.Update(context.Background(), func(*storage.Tx) error { return nil })
		require.ErrorIs(t, err, storage.ErrDamaged)
		require.ErrorContains(t, err, "symbolic link")
		require.NoFileExists(t, target, "root created a file where a member's link pointed")
	})

	t.Run("ledger is a link to root's file", func(t *testing.T) {
		s := newShared(t)
		out, err := s.member(t, `ln -s "$VICTIM" chronos.db`)
		require.NoError(t, err, out)
		l := New(filepath.Join(s.dir, "chronos.db"))
		require.ErrorIs(t, l.Update(context.Background(), func(*storage.Tx) error { return nil }), storage.ErrDamaged)
		s.untouched(t)
		// A link never was a ledger: the doctor asks for --force, then moves
		// the link aside, and touches nothing it points at.
		_, err = l.Repair()
		require.ErrorIs(t, err, ErrNotLedger)
		s.untouched(t)
		r, err := l.RepairAnyway()
		require.NoError(t, err)
		require.True(t, r.After.Healthy, "%v", r.After.Problems)
		s.untouched(t)
	})
}

// The names doctor --repair writes cannot be guessed in advance, and a
// member swapping links in for every file of the directory as fast as they
// can never makes root write, chmod or chown another file.
func TestRepairNeverWritesThroughMembersNames(t *testing.T) {
	t.Parallel()
	s := newShared(t)
	l := s.ledger(t)
	for range 20 {
		addOne(t, l)
	}
	// Planted in advance: links at the names a repair used to write in the
	// next seconds.
	var plant []string
	now := time.Now().UTC()
	for i := range 5 {
		stamp := now.Add(time.Duration(i) * time.Second).Format("20060102T150405Z")
		for _, name := range []string{"chronos.db.damaged-" + stamp, "chronos.db.damaged-" + stamp + ".tmp", "chronos.db.repair.tmp", "chronos.db.backup.tmp"} {
			plant = append(plant, `ln -sf "$VICTIM" `+name)
		}
	}
	out, err := s.member(t, strings.Join(plant, " && "))
	require.NoError(t, err, out)
	// And for as long as the test runs: every other file is swapped for a
	// link to root's file.
	s.startMember(t, `while :; do for f in chronos.db.*; do case "$f" in *.backup) ;; *) ln -sfn "$VICTIM" .l$$ && mv -f .l$$ "$f" ;; esac; done 2>/dev/null; done`)

	for range 3 {
		// The member damages the ledger, which they may write.
		out, err := s.member(t, `dd if=/dev/urandom of=chronos.db bs=1 count=300 seek=5000 conv=notrunc 2>&1`)
		require.NoError(t, err, out)
		r, err := l.Repair()
		require.NoError(t, err)
		s.untouched(t)
		if r.Done {
			st, err := os.Lstat(r.SavedAs)
			require.NoError(t, err)
			require.True(t, st.Mode().IsRegular(), "the saved copy is root's own file")
		}
		st, err := os.Lstat(l.Path)
		require.NoError(t, err)
		uid, gid, _ := storage.OwnerOf(st)
		require.Equal(t, []int{0, memberGID}, []int{uid, gid}, "the rebuilt ledger is root's, in the group")
		require.Equal(t, fs.FileMode(0o660), st.Mode())
	}
}

// Root writes only a ledger root owns, with one name: a member's own file
// at the ledger's path (possible before the ledger exists) or a second name
// for it is refused with a message that says what to do.
func TestRootRefusesLedgerItDoesNotOwn(t *testing.T) {
	t.Parallel()
	s := newShared(t)
	good := newLedger(t)
	addOne(t, good)
	data, err := os.ReadFile(good.Path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(s.dir), "copy"), data, 0o644))
	out, err := s.member(t, `cp ../copy chronos.db && chmod 666 chronos.db`)
	require.NoError(t, err, out)
	l := New(filepath.Join(s.dir, "chronos.db"))
	before, err := os.ReadFile(l.Path)
	require.NoError(t, err)

	err = l.Update(context.Background(), func(*storage.Tx) error { return nil })
	require.ErrorIs(t, err, storage.ErrUnsafeFile)
	require.ErrorContains(t, err, "belongs to nobody, not root")
	require.ErrorContains(t, err, "sudo chronos init --shared")
	after, err := os.ReadFile(l.Path)
	require.NoError(t, err)
	require.Equal(t, before, after)
	// Reading it is harmless, and works.
	require.Equal(t, 1, partitionCount(t, l))

	// Root's own ledger with a second name is refused too.
	require.NoError(t, os.Remove(l.Path))
	root := s.ledger(t)
	out, err = s.member(t, `ln chronos.db another-name`)
	require.NoError(t, err, out)
	err = root.Update(context.Background(), func(*storage.Tx) error { return nil })
	require.ErrorIs(t, err, storage.ErrUnsafeFile)
	require.ErrorContains(t, err, "2 names")
}
