package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// churn makes n bookings and releases each, as a busy lab does: every one
// leaves deleted keys in the live bucket behind.
func churn(t *testing.T, s *Store, n int) {
	t.Helper()
	for range n {
		id, err := addBooking(s)
		require.NoError(t, err)
		require.NoError(t, s.Update(context.Background(), func(tx *storage.Tx) error {
			p, err := tx.Partition(id)
			if err != nil {
				return err
			}
			p.State = domain.Released
			return tx.PutPartition(&p)
		}))
	}
}

// revision is etcd's current revision.
func revision(t *testing.T, s *Store) int64 {
	r, err := s.cli.Get(context.Background(), s.versionKey())
	require.NoError(t, err)
	return r.Header.Revision
}

// etcd forgets the ledger's versions once they are older than the caller
// keeps, by the caller's clock, and not before; the ledger itself loses
// nothing, and a clock gone back starts the count again.
func TestForgetHistory(t *testing.T) {
	t.Parallel()
	s := openOn(t, etcdtest.Start(t, 1), 10*time.Second)
	ctx := context.Background()
	const keep = 10 * time.Minute
	// Nothing is forgotten within a minute by the kernel's clock, however
	// far the caller's runs ahead (see historyFloor)...
	t0 := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC) // any time: only differences count
	start := revision(t, s)
	require.NoError(t, s.ForgetHistory(ctx, t0, keep))
	churn(t, s, 2)
	require.NoError(t, s.ForgetHistory(ctx, t0.Add(24*time.Hour), keep))
	_, err := s.cli.Get(ctx, s.versionKey(), clientv3.WithRev(start-1))
	require.NoError(t, err, "kept: a minute has not passed")
	// ...which this test's cluster, its own, does without.
	s.hist.floor = 0
	s.hist.marks = nil

	kept, err := addBooking(s)
	require.NoError(t, err)
	first := revision(t, s)
	require.NoError(t, s.ForgetHistory(ctx, t0, keep))
	churn(t, s, 20)
	require.NoError(t, s.ForgetHistory(ctx, t0.Add(3*time.Minute), keep))
	churn(t, s, 20)
	readAt := func(rev int64) error {
		_, err := s.cli.Get(ctx, s.versionKey(), clientv3.WithRev(rev))
		return err
	}
	require.NoError(t, s.ForgetHistory(ctx, t0.Add(keep-time.Second), keep))
	require.NoError(t, readAt(first-1), "kept until keep has passed")

	require.NoError(t, s.ForgetHistory(ctx, t0.Add(keep), keep))
	require.ErrorIs(t, readAt(first-1), rpctypes.ErrCompacted, "older than keep: forgotten")
	require.NoError(t, readAt(first), "the revision current keep ago stays")
	second := revision(t, s)
	require.NoError(t, s.ForgetHistory(ctx, t0.Add(keep+time.Minute), keep))
	require.NoError(t, readAt(first+1), "nothing more is keep old yet")

	var live, ended int
	require.NoError(t, s.View(ctx, func(tx *storage.Tx) error {
		parts, err := tx.Partitions()
		for _, p := range parts {
			if p.State == domain.Live {
				live++
				require.Equal(t, kept, p.ID)
			} else {
				ended++
			}
		}
		return err
	}))
	require.Equal(t, 1, live)
	require.Equal(t, 42, ended)

	// The clock went back an hour: what it noted is no measure any more,
	// and it counts again from the step.
	back := t0.Add(-time.Hour)
	require.NoError(t, s.ForgetHistory(ctx, back, keep))
	require.NoError(t, s.ForgetHistory(ctx, back.Add(keep-time.Second), keep))
	require.NoError(t, readAt(first+1), "no mark from before the step counts")
	require.NoError(t, s.ForgetHistory(ctx, back.Add(keep), keep))
	require.ErrorIs(t, readAt(second-1), rpctypes.ErrCompacted, "keep after the step")
}

// A watcher whose last seen change etcd has forgotten (a ledger unchanged
// for longer than its history is kept, hosts' statuses written meanwhile)
// hears of the next change, and of nothing else: asking for the forgotten
// revision again and again woke it at every poll.
func TestChangesAfterTheHistoryIsForgotten(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	s := openOn(t, c, 10*time.Second)
	_, err := addBooking(s)
	require.NoError(t, err)
	watcher, err := Open(Config{Endpoints: c.Endpoints(), Prefix: s.Prefix(), Timeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = watcher.Close() })
	require.NoError(t, watcher.View(context.Background(), func(tx *storage.Tx) error { _, err := tx.Partitions(); return err }))
	for range 5 { // not the ledger: statuses, say
		_, err := s.cli.Put(context.Background(), s.Prefix()+"/hosts/elsewhere", "up")
		require.NoError(t, err)
	}
	_, err = s.cli.Compact(context.Background(), revision(t, s))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := watcher.Changes(ctx, 50*time.Millisecond)
	heard := func(what string) {
		t.Helper()
		select {
		case <-changes:
		case <-time.After(10 * time.Second):
			t.Fatal(what)
		}
	}
	heard("the watch began again from what etcd keeps, saying something may have changed")
	select { // asking again for the forgotten revision fails every poll, each failure a notice
	case <-changes:
		t.Fatal("a notice with nothing changed")
	case <-time.After(6 * 50 * time.Millisecond):
	}
	_, err = addBooking(s)
	require.NoError(t, err)
	heard("a change after it is heard")
}
