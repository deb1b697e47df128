package bolt

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// A booking stored before bookings had a start starts when it was made,
// through every path that reads bookings.
func TestOldBookingStartsWhenMade(t *testing.T) {
	t.Parallel()
	l := New(filepath.Join(t.TempDir(), "chronos.db"))
	old := `{"v":1,"id":1,"device":0,"share_ppm":500000,"created":"2026-11-29T12:00:00Z","expires":"2026-11-29T13:00:00Z","state":"live"}`
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		if err := tx.Raw().Put(storage.BucketPartitions, storage.IDKey(1), []byte(old)); err != nil {
			return err
		}
		return tx.Raw().Put(storage.BucketLive, storage.IDKey(1), []byte{})
	}))
	created := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		p, err := tx.Partition(1)
		require.NoError(t, err)
		require.Equal(t, created, p.Start)
		require.True(t, p.LiveAt(created))
		for _, read := range []func() ([]domain.Partition, error){tx.Partitions, tx.LivePartitions,
			func() ([]domain.Partition, error) { return tx.PartitionsSince(created) }} {
			parts, err := read()
			require.NoError(t, err)
			require.Len(t, parts, 1)
			require.Equal(t, created, parts[0].Start)
		}
		return nil
	}))
}

// The waiting line keeps an index of the requests still waiting, as the
// live index does for bookings; ids count on their own.
func TestWaitingIndex(t *testing.T) {
	t.Parallel()
	l := New(filepath.Join(t.TempDir(), "chronos.db"))
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		for range 3 {
			r := domain.Request{Device: 0, SharePPM: 1, Duration: time.Hour, State: domain.Waiting}
			if err := tx.PutRequest(&r); err != nil {
				return err
			}
		}
		r, err := tx.Request(2)
		if err != nil {
			return err
		}
		r.State, r.Partition = domain.Granted, 7
		return tx.PutRequest(&r)
	}))
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		line, err := tx.WaitingRequests()
		require.NoError(t, err)
		require.Len(t, line, 2)
		require.Equal(t, []uint64{1, 3}, []uint64{line[0].ID, line[1].ID})
		_, err = tx.Request(9)
		require.ErrorIs(t, err, storage.ErrNotFound)
		return nil
	}))
	d, err := l.Diagnose()
	require.NoError(t, err)
	require.True(t, d.Healthy, "%v", d.Problems)
}

// Held intervals are read by user from an instant on, and let go before
// one, without touching another user's.
func TestHeldByUserAndEnd(t *testing.T) {
	t.Parallel()
	l := New(filepath.Join(t.TempDir(), "chronos.db"))
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		for i, uid := range []int{7, 8, 7, 7, 8} {
			if err := tx.AddHeld(uid, domain.Held{Partition: uint64(i + 1), Start: at(i), End: at(i + 1), SharePPM: 1}); err != nil {
				return err
			}
		}
		return tx.DropHeld(7, at(2))
	}))
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		held, err := tx.HeldSince(7, at(0))
		require.NoError(t, err)
		var ids []uint64
		for _, h := range held {
			ids = append(ids, h.Partition)
		}
		require.Equal(t, []uint64{3, 4}, ids, "uid 7's from the one ending at 2 on; the one ending at 1 let go")
		held, err = tx.HeldSince(8, at(3))
		require.NoError(t, err)
		require.Len(t, held, 1)
		require.Equal(t, uint64(5), held[0].Partition)
		return nil
	}))
}
