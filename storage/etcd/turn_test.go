package etcd

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// note writes an event that names who wrote it, through update.
func note(update func(context.Context, func(*storage.Tx) error) error, who string) error {
	return update(context.Background(), func(tx *storage.Tx) error {
		return tx.AddEvent(domain.Event{Kind: domain.EventWarned, Detail: who})
	})
}

// inLine is how many writers wait their turn on s's ledger.
func inLine(t *testing.T, s *Store) int64 {
	t.Helper()
	resp, err := s.Client().Get(context.Background(), s.turnsKey(), clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	return resp.Count
}

// Writers that lose wait their turn in line and commit in the order they
// joined it, none giving up busy however long the one ahead takes; a
// monitor's pass (UpdateUrgent) goes ahead of them all, even of a writer
// holding the turn.
func TestWritersWaitTheirTurnInOrder(t *testing.T) {
	t.Parallel()
	c := etcdtest.Shared(t)
	const timeout = 30 * time.Second
	first := openOn(t, c, timeout)
	sibling := func() *Store {
		s, err := Open(Config{Endpoints: c.Endpoints(), Prefix: first.Prefix(), Timeout: timeout})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	other := sibling()
	// first loses twice, then holds the turn, and stays in its commit
	// until let go.
	held, letGo := make(chan struct{}), make(chan struct{})
	var attempts atomic.Int32
	first.beforeCommit = func() {
		switch attempts.Add(1) {
		case 1, 2:
			_, err := addBooking(other)
			require.NoError(t, err)
		case 3:
			close(held)
			<-letGo
		}
	}
	errs := make(chan error, 10)
	go func() { errs <- note(first.Update, "first") }()
	<-held
	names := []string{"w1", "w2", "w3", "w4"}
	for i, name := range names {
		w := sibling()
		go func() { errs <- note(w.Update, name) }()
		require.Eventually(t, func() bool { return inLine(t, first) == int64(i+2) }, 10*time.Second, 5*time.Millisecond,
			"%s joins the line behind the writers before it", name)
	}

	// The monitor commits while the turn's holder is still in its commit.
	require.NoError(t, note(sibling().UpdateUrgent, "monitor"))
	close(letGo)
	for range len(names) + 1 {
		require.NoError(t, <-errs)
	}
	require.Zero(t, inLine(t, first), "every place in line was given back")

	var order []string
	require.NoError(t, first.View(context.Background(), func(tx *storage.Tx) error {
		evs, err := tx.Events(0, 0)
		for _, e := range evs {
			if e.Kind == domain.EventWarned {
				order = append(order, e.Detail)
			}
		}
		return err
	}))
	require.Equal(t, []string{"monitor", "first", "w1", "w2", "w3", "w4"}, order)
}

// A writer that finds others waiting its turn joins the line at once,
// rather than committing twice to lose: each losing commit costs every
// member of the cluster a write.
func TestWriterFindingALineJoinsIt(t *testing.T) {
	t.Parallel()
	c := etcdtest.Shared(t)
	s := openOn(t, c, 30*time.Second)
	other, err := Open(Config{Endpoints: c.Endpoints(), Prefix: s.Prefix(), Timeout: 30 * time.Second})
	require.NoError(t, err)
	defer func() { _ = other.Close() }()
	ahead, err := other.takeTurn(context.Background(), ordinary)
	require.NoError(t, err)

	var commits atomic.Int32
	s.beforeCommit = func() { commits.Add(1) }
	done := make(chan error, 1)
	go func() { done <- note(s.Update, "s") }()
	require.Eventually(t, func() bool { return inLine(t, s) == 2 }, 10*time.Second, 5*time.Millisecond, "s joins the line")
	require.Zero(t, commits.Load(), "s waits without committing")
	other.endTurn(context.Background(), ahead)
	require.NoError(t, <-done)
	require.Equal(t, int32(1), commits.Load(), "s committed once, in its turn")
}
