package bolt

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// A ledger last written by a chronos from before accounting lacks its
// buckets: that is no damage, and the next write adds them.
func TestLedgerFromBeforeAccountingIsHealthy(t *testing.T) {
	t.Parallel()
	l, _ := ledgerWith(t, 3)
	db, err := bbolt.Open(l.Path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(btx *bbolt.Tx) error {
		for _, b := range [][]byte{storage.BucketBookingUsage, storage.BucketSamples, storage.BucketUnbooked} {
			if err := btx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, db.Close())
	d, err := l.Diagnose()
	require.NoError(t, err)
	require.True(t, d.Healthy, "%v", d.Problems)

	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		return tx.PutBookingUsage(domain.BookingUsage{Partition: 1, Idle: time.Minute})
	}))
	d, err = l.Diagnose()
	require.NoError(t, err)
	require.True(t, d.Healthy, "%v", d.Problems)
}

func TestUsageRoundTrip(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		u, ok, err := tx.BookingUsage(7)
		require.False(t, ok)
		require.Equal(t, domain.BookingUsage{Partition: 7}, u)
		return err
	}))
	want := domain.BookingUsage{Partition: 7, Through: at, Idle: time.Hour, GPUTime: 90 * time.Second, MemoryPeak: 3 << 30,
		IdleFor: 50 * time.Minute, Warnings: 1, WarnedAt: at, HeldUntil: at.Add(time.Hour), HoldReason: "tokenizing", Holds: 1}
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error { return tx.PutBookingUsage(want) }))
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		got, ok, err := tx.BookingUsage(7)
		require.True(t, ok)
		require.Equal(t, want, got)
		all, err2 := tx.BookingUsages()
		require.NoError(t, err2)
		require.Equal(t, map[uint64]domain.BookingUsage{7: want}, all)
		return err
	}))
}

// GPU minutes are read by time range and GPU, and the old ones dropped.
func TestGPUMinutes(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		for i := range 5 {
			for _, uuid := range []string{"GPU-a", "GPU-b"} {
				m := domain.GPUMinute{Minute: start.Add(time.Duration(i) * time.Minute), UUID: uuid, Util: i, Idle: []uint64{uint64(i)}}
				if err := tx.PutGPUMinute(m); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		taken, err := tx.HasGPUMinute(start.Add(time.Minute), "GPU-b")
		require.NoError(t, err)
		require.True(t, taken)
		taken, err = tx.HasGPUMinute(start.Add(5*time.Minute), "GPU-b")
		require.NoError(t, err)
		require.False(t, taken)
		got, err := tx.GPUMinutes(start.Add(time.Minute), start.Add(3*time.Minute), "GPU-a")
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, 1, got[0].Util)
		require.Equal(t, []uint64{2}, got[1].Idle)
		all, err := tx.GPUMinutes(time.Time{}, start.Add(time.Hour), "")
		require.Len(t, all, 10)
		return err
	}))
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error { return tx.DropGPUMinutes(start.Add(3 * time.Minute)) }))
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		all, err := tx.GPUMinutes(time.Time{}, start.Add(time.Hour), "")
		require.Len(t, all, 4)
		require.Equal(t, start.Add(3*time.Minute), all[0].Minute.UTC())
		return err
	}))
}

// Unbooked use adds up per user per UTC day.
func TestUnbookedUse(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
		for _, add := range []struct {
			at  time.Time
			uid int
			d   time.Duration
		}{{day.Add(time.Hour), 1001, time.Minute}, {day.Add(23 * time.Hour), 1001, 30 * time.Second}, {day.Add(25 * time.Hour), 1001, time.Second}, {day.Add(time.Hour), 1002, time.Hour}} {
			if err := tx.AddUnbooked(add.at, add.uid, "u", add.d); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) error {
		got, err := tx.Unbooked(day)
		require.NoError(t, err)
		require.Len(t, got, 3)
		require.Equal(t, 1001, got[0].UID)
		require.Equal(t, 90*time.Second, got[0].GPUTime)
		require.Equal(t, time.Hour, got[1].GPUTime)
		require.Equal(t, day.Add(24*time.Hour), got[2].Day.UTC())
		later, err := tx.Unbooked(day.Add(30 * time.Hour))
		require.Len(t, later, 1)
		return err
	}))
}

// Repair keeps what monitors measured of each booking, holds included.
func TestRepairKeepsUsage(t *testing.T) {
	t.Parallel()
	l, _ := ledgerWith(t, 5)
	want := domain.BookingUsage{Partition: 2, Through: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Idle: time.Hour, HeldUntil: time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC), HoldReason: "tokenizing", Holds: 1}
	require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error { return tx.PutBookingUsage(want) }))
	for name, damage := range map[string]func([]byte){
		// bbolt cannot open the file: every record is read from its pages.
		"both meta pages": func(b []byte) {
			page := os.Getpagesize()
			for _, at := range []int{16, page + 16} {
				for i := at; i < at+64; i++ {
					b[i] ^= 0xa5
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(l.Path)
			require.NoError(t, err)
			damage(data)
			broken := New(filepath.Join(t.TempDir(), "chronos.db"))
			require.NoError(t, os.WriteFile(broken.Path, data, 0o600))
			r, err := broken.Repair()
			require.NoError(t, err)
			require.True(t, r.After.Healthy, "%v", r.After.Problems)
			require.NoError(t, broken.View(context.Background(), func(tx *storage.Tx) error {
				got, ok, err := tx.BookingUsage(2)
				require.True(t, ok)
				require.Equal(t, want.HoldReason, got.HoldReason)
				require.Equal(t, want.Idle, got.Idle)
				require.True(t, want.HeldUntil.Equal(got.HeldUntil))
				return err
			}))
		})
	}
}
