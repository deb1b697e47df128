package etcd

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// The end of the caller's ctx (Ctrl-C) ends a transaction waiting on an
// etcd that does not answer — stopped, or gone with the client retrying —
// at once, saying so, rather than at the store's timeout as "unavailable".
func TestCancelEndsAWaitingTransaction(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	const timeout = 10 * time.Second
	s := openOn(t, c, timeout)
	_, err := addBooking(s)
	require.NoError(t, err)

	cancelled := func(what string, op func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		err := op(ctx)
		took := time.Since(start)
		require.ErrorIs(t, err, context.Canceled, what)
		require.NotErrorIs(t, err, storage.ErrUnavailable, what)
		require.NotErrorIs(t, err, storage.ErrBusy, what)
		require.Less(t, took, timeout/2, "%s: %v", what, err)
		// The member was stopped before the call: nothing reached it, and
		// the error must not leave the write in doubt.
		require.NotContains(t, err.Error(), "not known", what)
	}
	write := func(ctx context.Context) error {
		return s.Update(ctx, func(tx *storage.Tx) error {
			return tx.AddEvent(domain.Event{Kind: domain.EventWarned, Detail: "cancelled"})
		})
	}
	m := c.Members[0]
	m.Pause()
	cancelled("a write to a stopped etcd", write)
	cancelled("an urgent write to a stopped etcd", func(ctx context.Context) error {
		return storage.UpdateUrgent(ctx, s, func(tx *storage.Tx) error {
			return tx.AddEvent(domain.Event{Kind: domain.EventWarned, Detail: "cancelled"})
		})
	})
	cancelled("a read of a stopped etcd", func(ctx context.Context) error {
		return s.View(ctx, func(tx *storage.Tx) error { _, err := tx.Partitions(); return err })
	})
	m.Resume()
	require.NoError(t, c.WaitHealthy(timeout))
	requireNoneWritten := func() {
		t.Helper()
		require.NoError(t, s.View(context.Background(), func(tx *storage.Tx) error {
			evs, err := tx.Events(0, 0)
			for _, e := range evs {
				if e.Detail == "cancelled" {
					return errors.New("a cancelled write was committed")
				}
			}
			return err
		}))
	}
	requireNoneWritten()

	m.Kill()
	cancelled("a write to an etcd that is gone", write)
}

// A transaction's first read takes the small buckets whole (the policy and
// inventories, and the indexes of live bookings and waiting requests), so
// its scans of them ask etcd nothing more: they answer with the member
// stopped, and see the transaction's own writes.
func TestSmallBucketsAnswerFromTheFirstRead(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	s := openOn(t, c, 2*time.Second)
	var ids []uint64
	for range 3 {
		id, err := addBooking(s)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	scan := func(raw storage.RawTx, bucket []byte, reverse bool) []string {
		var keys []string
		require.NoError(t, raw.Scan(bucket, nil, reverse, func(k, _ []byte) (bool, error) {
			keys = append(keys, string(k))
			return true, nil
		}))
		return keys
	}
	m := c.Members[0]
	defer m.Resume()
	err := s.Update(context.Background(), func(tx *storage.Tx) error {
		raw := tx.Raw()
		before := scan(raw, storage.BucketLive, false) // the first read: etcd answers it
		require.Len(t, before, len(ids))
		m.Pause()
		require.Equal(t, before, scan(raw, storage.BucketLive, false))
		require.NoError(t, raw.Delete(storage.BucketLive, storage.IDKey(ids[1])))
		require.NoError(t, raw.Put(storage.BucketWaiting, storage.IDKey(7), []byte{}))
		require.Equal(t, []string{before[2], before[0]}, scan(raw, storage.BucketLive, true))
		require.Equal(t, []string{string(storage.IDKey(7))}, scan(raw, storage.BucketWaiting, false))
		_, _, err := tx.Policy()
		require.NoError(t, err)
		return errors.New("rolled back")
	})
	require.EqualError(t, err, "rolled back")
}
