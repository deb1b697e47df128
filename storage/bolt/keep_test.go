package bolt

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// keptLedger is a ledger whose writer keeps the file open, as a keeper's.
func keptLedger(t *testing.T) *Ledger {
	t.Helper()
	l := newLedger(t)
	l.KeepOpen, l.Timeout, l.BackupEvery = true, time.Second, -1
	return l
}

func liveIDs(t *testing.T, l *Ledger) []uint64 {
	t.Helper()
	var ids []uint64
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		parts, err := tx.LivePartitions()
		for _, p := range parts {
			ids = append(ids, p.ID)
		}
		return err
	}))
	return ids
}

// otherWriter writes a booking into the file at path as another process
// would: a handle of its own, locked, committed and closed.
func otherWriter(t *testing.T, path string) uint64 {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	defer db.Close()
	p := domain.Partition{Device: 1, SharePPM: 1000, State: domain.Live, Created: time.Now(), Expires: time.Now().Add(time.Hour)}
	require.NoError(t, db.Update(func(btx *bbolt.Tx) error {
		return runTx(btx, func(tx *storage.Tx) error { return tx.PutPartition(&p) })
	}))
	return p.ID
}

// Between its writes the kept file is unlocked: another process reads it,
// and writes it, meanwhile. The next write sees the other's commit and
// carries on from it, rather than from what this process last wrote: no
// id is handed out twice, nothing the other wrote is lost.
func TestKeptFileSeesAnotherWriter(t *testing.T) {
	t.Parallel()
	l := keptLedger(t)
	a := addOne(t, l)
	require.NotNil(t, batcherFor(l.Path).kept.db, "kept open after the write")
	other := otherWriter(t, l.Path) // would wait out its second if the file were still locked
	b := addOne(t, l)
	require.NotEqual(t, other, b.ID, "an id handed out twice")
	require.ElementsMatch(t, []uint64{a.ID, other, b.ID}, liveIDs(t, l))
	c := addOne(t, l)
	require.ElementsMatch(t, []uint64{a.ID, other, b.ID, c.ID}, liveIDs(t, l))
}

// A file renamed over the kept one (a repair, a restore) is the ledger
// from then on: the next write goes to it, not to the old file.
func TestKeptFileReplacedIsLetGo(t *testing.T) {
	t.Parallel()
	l := keptLedger(t)
	addOne(t, l)
	fresh := New(filepath.Join(t.TempDir(), "fresh.db"))
	fresh.BackupEvery = -1
	f := addOne(t, fresh)
	require.NoError(t, os.Rename(fresh.Path, l.Path))
	b := addOne(t, l)
	require.ElementsMatch(t, []uint64{f.ID, b.ID}, liveIDs(t, l))
}

// A kept file damaged meanwhile is opened anew, with the checks every
// writer makes: the write is refused, with an error, not a crash.
func TestKeptFileDamagedIsRefused(t *testing.T) {
	t.Parallel()
	l := keptLedger(t)
	addOne(t, l)
	f, err := os.OpenFile(l.Path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, 8192), 0) // both meta pages
	require.NoError(t, err)
	require.NoError(t, f.Close())
	err = l.Update(context.Background(), func(tx *storage.Tx) error {
		p := domain.Partition{State: domain.Live}
		return tx.PutPartition(&p)
	})
	require.ErrorIs(t, err, storage.ErrDamaged)
	require.Nil(t, batcherFor(l.Path).kept.db)
}

// Root keeps a guarded ledger (a setgid directory members may not write)
// open between its writes; an open lab's ledger, which members write too,
// and a personal one are opened for every write.
func TestRootKeepsAGuardedLedgerOpen(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the guarded ledger's writer is root")
	}
	for _, c := range []struct {
		mode fs.FileMode
		keep bool
	}{{0o750 | fs.ModeSetgid, true}, {0o770 | fs.ModeSetgid | fs.ModeSticky, false}, {0o700, false}} {
		dir := filepath.Join(t.TempDir(), "lab")
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.Chmod(dir, c.mode))
		require.Equal(t, c.keep, New(filepath.Join(dir, "chronos.db")).KeepOpen, "%v", c.mode)
	}
}
