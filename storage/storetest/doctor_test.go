package storetest_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// The record checks hold on every engine: a ledger written as chronos
// writes it is healthy; a forged record without a state (hidden from list,
// counted by admission through the live index) and a booking ended with
// no event are found, on etcd as on a file.
func TestDiagnoseStoreFindsForgedRecords(t *testing.T) {
	storetest.Each(t, func(t *testing.T, open storetest.Opener) {
		s := open()
		now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		booking := func(state domain.State) domain.Partition {
			return domain.Partition{Device: 0, SharePPM: 300_000, UID: 1001, User: "alice",
				Created: now.Add(-time.Hour), Expires: now.Add(time.Hour), State: state}
		}
		require.NoError(t, s.Update(context.Background(), func(tx *storage.Tx) error {
			for _, st := range []domain.State{domain.Live, domain.Released} {
				p := booking(st)
				require.NoError(t, tx.PutPartition(&p))
				require.NoError(t, tx.AddEvent(domain.Event{Time: now, Kind: domain.EventCreated, Partition: p.ID}))
				if st == domain.Released {
					require.NoError(t, tx.AddEvent(domain.Event{Time: now, Kind: domain.EventReleased, Partition: p.ID}))
				}
			}
			return nil
		}))
		d, err := storage.DiagnoseStore(context.Background(), s, now)
		require.NoError(t, err)
		require.True(t, d.Healthy, d.Problems)
		require.Equal(t, 2, d.Partitions)
		require.Equal(t, 1, d.Live)
		require.Equal(t, 3, d.Events)

		require.NoError(t, s.Update(context.Background(), func(tx *storage.Tx) error {
			// A member's forgery: a 100% record without a state, in the
			// live index, and a release that no event records.
			id := make([]byte, 8)
			binary.BigEndian.PutUint64(id, 5)
			forged := `{"v":1,"id":5,"device":0,"share_ppm":1000000,"uid":65534,"user":"nobody","created":"2030-01-02T02:00:00Z","expires":"2030-01-02T05:00:00Z"}`
			require.NoError(t, tx.Raw().Put([]byte("partitions"), id, []byte(forged)))
			require.NoError(t, tx.Raw().Put([]byte("live"), id, []byte{}))
			p := booking(domain.Released)
			return tx.PutPartition(&p)
		}))
		d, err = storage.DiagnoseStore(context.Background(), s, now)
		require.NoError(t, err)
		require.False(t, d.Healthy)
		require.Contains(t, d.Problems, "partition 5: has no state: list hides it, yet the live index may make admission count it")
		require.Contains(t, d.Problems, "the live index lists partition 5, which is without a state")
		require.Contains(t, d.Problems, "partition 3 has no created event")
		require.Contains(t, d.Problems, "partition 3 ended with no event saying who ended it")
		require.Contains(t, d.Problems, "the partition id counter (3) is behind the highest id (5): ids would be reused")
	})
}
