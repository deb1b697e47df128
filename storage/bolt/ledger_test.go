package bolt

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

func newLedger(t *testing.T) *Ledger {
	t.Helper()
	return New(filepath.Join(t.TempDir(), "chronos.db"))
}

func addOne(t *testing.T, l *Ledger) domain.Partition {
	t.Helper()
	p := domain.Partition{Device: 0, SharePPM: 100_000, State: domain.Live, Created: time.Now(), Expires: time.Now().Add(time.Hour)}
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		return tx.AddEvent(domain.Event{Kind: "created", Partition: p.ID})
	}))
	return p
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	// Reading a ledger that doesn't exist yet sees it empty and creates nothing.
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		parts, err := tx.Partitions()
		require.NoError(t, err)
		require.Empty(t, parts)
		_, ok, err := tx.Policy()
		require.False(t, ok)
		return err
	}))
	_, err := os.Stat(l.Path)
	require.ErrorIs(t, err, fs.ErrNotExist)
	// One whose directory does not exist is a mistyped path, not empty.
	typo := New(filepath.Join(t.TempDir(), "typo", "chronos.db"))
	err = typo.View(context.Background(), func(*storage.Tx) error { return nil })
	require.ErrorIs(t, err, fs.ErrNotExist)
	var pathErr *fs.PathError
	require.ErrorAs(t, err, &pathErr)
	require.Equal(t, typo.Path, pathErr.Path)

	p1, p2 := addOne(t, l), addOne(t, l)
	require.Equal(t, uint64(1), p1.ID)
	require.Equal(t, uint64(2), p2.ID)
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		got, err := tx.Partition(2)
		require.NoError(t, err)
		require.Equal(t, storage.SchemaVersion, got.V)
		_, err = tx.Partition(3)
		require.ErrorIs(t, err, storage.ErrNotFound)
		evs, err := tx.Events(1, 0)
		require.NoError(t, err)
		require.Len(t, evs, 1)
		require.Equal(t, uint64(2), evs[0].Seq)
		require.Equal(t, uint64(2), tx.LastEvent())
		return nil
	}))

	// A failing transaction leaves nothing behind.
	before, err := os.ReadFile(l.Path)
	require.NoError(t, err)
	err = l.Update(context.Background(), func(tx *storage.Tx) error {
		p := domain.Partition{State: domain.Live}
		require.NoError(t, tx.PutPartition(&p))
		return os.ErrInvalid
	})
	require.ErrorIs(t, err, os.ErrInvalid)
	after, err := os.ReadFile(l.Path)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

func TestFileModes(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	addOne(t, l)
	st, err := os.Stat(l.Path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), st.Mode().Perm())

	// In a setgid directory (a shared ledger) the file is group-writable,
	// whatever the umask.
	dir := filepath.Join(t.TempDir(), "shared")
	require.NoError(t, os.Mkdir(dir, 0o770))
	require.NoError(t, os.Chmod(dir, 0o770|fs.ModeSetgid))
	shared := New(filepath.Join(dir, "chronos.db"))
	require.Equal(t, fs.FileMode(0o660), shared.Mode)
	addOne(t, shared)
	st, err = os.Stat(shared.Path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o660), st.Mode().Perm())
}

func TestDamagedFiles(t *testing.T) {
	t.Parallel()
	good := newLedger(t)
	for range 20 {
		addOne(t, good)
	}
	goodBytes, err := os.ReadFile(good.Path)
	require.NoError(t, err)

	foreign := filepath.Join(t.TempDir(), "foreign.db")
	db, err := bbolt.Open(foreign, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("widgets")); return err }))
	require.NoError(t, db.Close())
	foreignBytes, err := os.ReadFile(foreign)
	require.NoError(t, err)

	flip := func(at int) []byte {
		b := append([]byte(nil), goodBytes...)
		for i := at; i < at+64 && i < len(b); i++ {
			b[i] ^= 0xff
		}
		return b
	}
	for name, content := range map[string][]byte{
		"text":              []byte("hello, this is not a database\n"),
		"empty":             {},
		"truncated":         goodBytes[:4096+100],
		"both meta pages":   append(flip(0)[:4096], flip(4096)[4096:]...),
		"data pages":        flip(len(goodBytes) - 4096),
		"foreign bbolt":     foreignBytes,
		"random-ish binary": append(make([]byte, 8192), 0x42),
	} {
		t.Run(name, func(t *testing.T) {
			l := New(filepath.Join(t.TempDir(), "chronos.db"))
			require.NoError(t, os.WriteFile(l.Path, content, 0o600))
			// Neither a read nor a write may panic or hang; a file that
			// does not read as a ledger is reported as damaged.
			viewErr := l.View(context.Background(), func(tx *storage.Tx) error { _, err := tx.Partitions(); return err })
			updErr := l.Update(context.Background(), func(tx *storage.Tx) error { _, err := tx.Partitions(); return err })
			if name == "data pages" && viewErr == nil {
				return // damage bbolt cannot see without a full check
			}
			if name == "empty" {
				// A writer killed between creating the file and writing
				// to it leaves it empty: it reads as an empty ledger (it
				// used to fail with "write: bad file descriptor", bbolt
				// initialising it read-only), and the next write sets it
				// up. Nothing was lost.
				require.NoError(t, viewErr)
				require.NoError(t, updErr)
				return
			}
			require.ErrorIs(t, viewErr, storage.ErrDamaged, "view: %v", viewErr)
			require.ErrorIs(t, updErr, storage.ErrDamaged, "update: %v", updErr)
		})
	}

	// bbolt keeps two meta pages: with one damaged, the file opens at the
	// state of the other, at worst one transaction earlier.
	t.Run("one meta page", func(t *testing.T) {
		l := New(filepath.Join(t.TempDir(), "chronos.db"))
		require.NoError(t, os.WriteFile(l.Path, flip(4096+16), 0o600))
		require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
			parts, err := tx.Partitions()
			require.GreaterOrEqual(t, len(parts), 19)
			return err
		}))
	})

	t.Run("directory", func(t *testing.T) {
		l := New(t.TempDir())
		require.ErrorIs(t, l.View(context.Background(), func(*storage.Tx) error { return nil }), storage.ErrDamaged)
		require.ErrorIs(t, l.Update(context.Background(), func(*storage.Tx) error { return nil }), storage.ErrDamaged)
	})
}

func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	addOne(t, l)
	db, err := bbolt.Open(l.Path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(storage.BucketMeta).Put(storage.KeySchema, []byte{storage.SchemaVersion + 1})
	}))
	require.NoError(t, db.Close())
	err = l.View(context.Background(), func(*storage.Tx) error { return nil })
	require.ErrorIs(t, err, storage.ErrNewerSchema)
	require.ErrorContains(t, err, "upgrade chronos")
	require.ErrorIs(t, l.Update(context.Background(), func(*storage.Tx) error { return nil }), storage.ErrNewerSchema)
}

// A process that holds the lock (stuck, stopped) makes others fail with a
// clear "busy" error within the timeout, never hang.
func TestBusyLedger(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	addOne(t, l)
	l.Timeout = 300 * time.Millisecond

	holder := exec.Command("flock", "-x", "-o", l.Path, "sleep", "5")
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) not installed")
	}
	require.NoError(t, holder.Start())
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	// Wait until the holder really has the lock.
	require.Eventually(t, func() bool {
		f, err := os.Open(l.Path)
		if err != nil {
			return false
		}
		defer f.Close()
		if syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil {
			return true
		}
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}, 3*time.Second, 10*time.Millisecond)

	start := time.Now()
	err := l.Update(context.Background(), func(*storage.Tx) error { return nil })
	require.ErrorIs(t, err, storage.ErrBusy)
	require.ErrorContains(t, err, "another chronos process has held")
	require.Less(t, time.Since(start), 2*time.Second)

	holder.Process.Kill()
	holder.Wait()
	require.NoError(t, l.Update(context.Background(), func(*storage.Tx) error { return nil }))
}

func TestCheckFindsNothingOnAGoodFile(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	for range 50 {
		addOne(t, l)
	}
	problems, err := l.Check()
	require.NoError(t, err)
	require.Empty(t, problems)
}

func TestWatchSeesOtherWriters(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	addOne(t, l)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A long poll, so only inotify can explain a quick notice.
	ch := Watch(ctx, l.Path, time.Hour)
	select {
	case <-ch:
		t.Fatal("notice before any write")
	case <-time.After(50 * time.Millisecond):
	}
	addOne(t, l)
	select {
	case <-ch:
	case <-time.After(2 * time.Second):
		t.Fatal("no notice after a write")
	}
	// Readers don't wake watchers.
	require.NoError(t, l.View(context.Background(), func(*storage.Tx) error { return nil }))
	select {
	case <-ch:
		t.Fatal("notice after a read")
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	require.Eventually(t, func() bool {
		_, open := <-ch
		return !open
	}, time.Second, 10*time.Millisecond)
}

func TestWatchPollsWithoutInotify(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	addOne(t, l)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := Watch(ctx, l.Path, 20*time.Millisecond)
	// Replace the file behind the watcher's back: the stamp changes.
	time.Sleep(30 * time.Millisecond)
	require.NoError(t, os.Chtimes(l.Path, time.Now(), time.Now().Add(time.Hour)))
	select {
	case <-ch:
	case <-time.After(2 * time.Second):
		t.Fatal("poll did not notice a changed stamp")
	}
}

func TestLiveIndexAndRecent(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	old := time.Now().Add(-48 * time.Hour)
	var ids []uint64
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		for i := range 6 {
			p := domain.Partition{State: domain.Live, Created: old.Add(time.Duration(i) * 10 * time.Hour), Expires: old.Add(100 * time.Hour)}
			if i%2 == 1 {
				p.State = domain.Released
			}
			if err := tx.PutPartition(&p); err != nil {
				return err
			}
			ids = append(ids, p.ID)
		}
		return nil
	}))
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		live, err := tx.LivePartitions()
		require.NoError(t, err)
		require.Len(t, live, 3)
		for _, p := range live {
			require.Equal(t, domain.Live, p.State)
		}
		// Created within 25 hours: ids 4, 5, 6 (created 10h apart from 48h
		// ago), plus the older live ones 1 and 3.
		recent, err := tx.PartitionsSince(time.Now().Add(-25 * time.Hour))
		require.NoError(t, err)
		var got []uint64
		for _, p := range recent {
			got = append(got, p.ID)
		}
		require.Equal(t, []uint64{1, 3, 4, 5, 6}, got)
		return nil
	}))
	// Ending a partition takes it out of the live index.
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		p, err := tx.Partition(ids[0])
		require.NoError(t, err)
		p.State = domain.Expired
		return tx.PutPartition(&p)
	}))
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		live, err := tx.LivePartitions()
		require.Len(t, live, 2)
		return err
	}))
}

// Each GPU's reading is a record of its own; storing readings replaces them
// all, so a GPU that vanished leaves no reading behind, and the ledger stays
// healthy for doctor.
func TestDeviceReadings(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	put := func(n int) {
		var rs []domain.DeviceReading
		for i := range n {
			rs = append(rs, domain.DeviceReading{Time: at, Backend: "nvml", Index: i, UUID: fmt.Sprintf("GPU-%d", i), MemoryTotal: 80 << 30, MemoryUsed: uint64(i) << 30,
				Holders: []domain.Holder{{User: "carol", UID: 1003, Bytes: uint64(i) << 30, PIDs: []int{4242}}}})
		}
		require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error { return tx.PutDeviceReadings(rs) }))
	}
	put(12)
	put(3)
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		rs, err := tx.DeviceReadings()
		require.NoError(t, err)
		require.Len(t, rs, 3)
		require.Equal(t, 2, rs[2].Index)
		r, ok, err := tx.DeviceReading(1)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, uint64(1<<30), r.MemoryUsed)
		require.Equal(t, []domain.Holder{{User: "carol", UID: 1003, Bytes: 1 << 30, PIDs: []int{4242}}}, r.Holders)
		_, ok, err = tx.DeviceReading(10)
		require.NoError(t, err)
		require.False(t, ok)
		return nil
	}))
	d, err := l.Diagnose()
	require.NoError(t, err)
	require.True(t, d.Healthy, d.Problems)
}
