package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// A snapshot (what a guarded ledger's keeper sends its members) reads as
// the ledger it was taken of: every bucket's scans, forward and back from
// any key, its gets, its sequences, and doctor's checks; it takes no
// write; and its version changes with its contents.
func TestSnapshotReadsAsTheLedger(t *testing.T) {
	storetest.Each(t, func(t *testing.T, open storetest.Opener) {
		s := open()
		ctx := context.Background()
		now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		require.NoError(t, s.Update(ctx, func(tx *storage.Tx) error {
			for i, st := range []domain.State{domain.Live, domain.Released, domain.Live} {
				p := domain.Partition{Device: i % 2, SharePPM: 300_000, UID: 1001, User: "alice", Created: now.Add(-time.Hour), Expires: now.Add(time.Hour), State: st}
				require.NoError(t, tx.PutPartition(&p))
				require.NoError(t, tx.AddEvent(domain.Event{Time: now, Kind: domain.EventCreated, Partition: p.ID}))
			}
			return nil // the release has no event: doctor says so of both
		}))
		var snap *storage.Snapshot
		var want storage.Diagnosis
		require.NoError(t, s.View(ctx, func(tx *storage.Tx) error {
			var err error
			snap, err = storage.TakeSnapshot(tx)
			storage.InspectRecords(tx, &want, now)
			return err
		}))
		data, version, err := snap.Encode()
		require.NoError(t, err)
		got, err := storage.DecodeSnapshot(data)
		require.NoError(t, err)
		_, again, err := got.Encode()
		require.NoError(t, err)
		require.Equal(t, version, again)

		var have storage.Diagnosis
		require.NoError(t, got.View(func(stx *storage.Tx) error {
			storage.InspectRecords(stx, &have, now)
			return s.View(ctx, func(tx *storage.Tx) error {
				for _, b := range storage.Buckets() {
					whole := scanAll(t, tx.Raw(), b, nil, false, 0)
					requireScan(t, whole, scanAll(t, stx.Raw(), b, nil, false, 0), string(b))
					requireScan(t, scanAll(t, tx.Raw(), b, nil, true, 0), scanAll(t, stx.Raw(), b, nil, true, 0), string(b)+" reversed")
					for _, kv := range whole {
						for _, from := range [][]byte{kv[0], append(kv[0], 0), kv[0][:len(kv[0])-1]} {
							requireScan(t, scanAll(t, tx.Raw(), b, from, false, 2), scanAll(t, stx.Raw(), b, from, false, 2), string(b)+" from")
							requireScan(t, scanAll(t, tx.Raw(), b, from, true, 2), scanAll(t, stx.Raw(), b, from, true, 2), string(b)+" back from")
						}
						v, err := stx.Raw().Get(b, kv[0])
						require.NoError(t, err)
						require.Equal(t, kv[1], v)
					}
				}
				return nil
			})
		}))
		require.Equal(t, want, have)
		require.Contains(t, have.Problems, "partition 2 ended with no event saying who ended it")

		require.ErrorContains(t, got.View(func(tx *storage.Tx) error { return tx.PutGuard(storage.Guard{Group: "x"}) }), "read-only")

		require.NoError(t, s.Update(ctx, func(tx *storage.Tx) error {
			return tx.AddEvent(domain.Event{Time: now, Kind: domain.EventReleased, Partition: 2})
		}))
		require.NoError(t, s.View(ctx, func(tx *storage.Tx) error {
			snap, err = storage.TakeSnapshot(tx)
			return err
		}))
		_, next, err := snap.Encode()
		require.NoError(t, err)
		require.NotEqual(t, version, next)
	})
}
