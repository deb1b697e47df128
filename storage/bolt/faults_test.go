package bolt

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

func partitionCount(t *testing.T, l *Ledger) int {
	t.Helper()
	n := 0
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		parts, err := tx.Partitions()
		n = len(parts)
		return err
	}))
	return n
}

// A ledger that cannot be written gives a clear error on writes, reads on,
// and loses nothing. Root ignores file modes, so as root the file is made
// immutable (chattr +i) instead.
func TestReadOnlyLedger(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	for range 5 {
		addOne(t, l)
	}
	before, err := os.ReadFile(l.Path)
	require.NoError(t, err)
	if os.Geteuid() == 0 {
		out, err := exec.Command("chattr", "+i", l.Path).CombinedOutput()
		if err != nil {
			t.Skipf("root ignores file modes, and chattr +i is not available here: %v %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("chattr", "-i", l.Path).Run() })
	} else {
		require.NoError(t, os.Chmod(l.Path, 0o444))
	}

	err = l.Update(context.Background(), func(*storage.Tx) error { return nil })
	require.Error(t, err)
	require.ErrorContains(t, err, "open ledger "+l.Path)
	require.ErrorContains(t, err, "read-only")
	require.Equal(t, 5, partitionCount(t, l), "reading goes on")
	_, err = l.Diagnose()
	require.NoError(t, err)
	after, err := os.ReadFile(l.Path)
	require.NoError(t, err)
	require.Equal(t, before, after)
}

// A full file system: writes fail with "no space left", nothing panics,
// and the ledger still opens with every booking made before. Needs root, to
// mount a small tmpfs.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	l := New(filepath.Join(dir, "chronos.db"))
	for range 5 {
		addOne(t, l)
	}
	// Fill what is left.
	filler, err := os.Create(filepath.Join(dir, "filler"))
	require.NoError(t, err)
	chunk := bytes.Repeat([]byte{1}, 4096)
	for {
		if _, err := filler.Write(chunk); err != nil {
			require.ErrorIs(t, err, unix.ENOSPC)
			break
		}
	}
	filler.Close()

	var failed error
	for i := 0; i < 200 && failed == nil; i++ {
		failed = l.Update(context.Background(), func(tx *storage.Tx) error {
			p := domain.Partition{SharePPM: 1, State: domain.Live, Expires: time.Now().Add(time.Hour)}
			if err := tx.PutPartition(&p); err != nil {
				return err
			}
			return tx.AddEvent(domain.Event{Kind: "created", Partition: p.ID, Detail: strings.Repeat("x", 2000)})
		})
	}
	require.Error(t, failed, "200 bookings fitted in a full file system")
	require.ErrorContains(t, failed, "no space left on device")

	n := partitionCount(t, l)
	require.GreaterOrEqual(t, n, 5)
	problems, err := l.Check()
	require.NoError(t, err)
	require.Empty(t, problems)
	d, err := l.Diagnose()
	require.NoError(t, err)
	require.True(t, d.Healthy, "%v", d.Problems)

	// Space again: writes carry on.
	require.NoError(t, os.Remove(filepath.Join(dir, "filler")))
	addOne(t, l)
	require.Equal(t, n+1, partitionCount(t, l))
}
