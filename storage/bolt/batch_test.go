package bolt

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
)

// txID is the id of the file's last committed transaction: one more for
// each commit.
func txID(t *testing.T, l *Ledger) int {
	t.Helper()
	db, err := bbolt.Open(l.Path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	id := 0
	require.NoError(t, db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }))
	return id
}

// putOne is a write that books one partition and notes its id in *id.
func putOne(id *uint64) func(*storage.Tx) error {
	return func(tx *storage.Tx) error {
		p := domain.Partition{Device: 0, SharePPM: 1, State: domain.Live}
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		*id = p.ID
		return nil
	}
}

// holdBatch starts a write that holds its batch (and the file's lock)
// until release is closed, and returns once it runs: writes made
// meanwhile queue behind it.
func holdBatch(t *testing.T, l *Ledger) (release chan struct{}, done chan error) {
	t.Helper()
	release, done, running := make(chan struct{}), make(chan error, 1), make(chan struct{})
	go func() {
		var once sync.Once
		done <- l.Update(context.Background(), func(*storage.Tx) error {
			once.Do(func() { close(running) })
			<-release
			return nil
		})
	}()
	<-running
	return release, done
}

// queueWrite starts fn as an Update, and returns once it waits in l's
// queue, so that writes queued one after another arrive in that order.
func queueWrite(t *testing.T, l *Ledger, fn func(*storage.Tx) error) chan error {
	t.Helper()
	b := batcherFor(l.Path)
	b.mu.Lock()
	before := len(b.queue)
	b.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- l.Update(context.Background(), fn) }()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) > before
	}, 5*time.Second, time.Millisecond)
	return done
}

// Many goroutines writing at once all land, once each, in fewer
// transactions than writes: those that arrive while one commits share
// the next.
func TestConcurrentWritesShareTransactions(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	l.BackupEvery = -1
	addOne(t, l)
	before := txID(t, l)

	const writers = 200
	ids := make([]uint64, writers)
	var runs atomic.Int64
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			put := putOne(&ids[i])
			require.NoError(t, l.Update(context.Background(), func(tx *storage.Tx) error {
				runs.Add(1)
				return put(tx)
			}))
		})
	}
	wg.Wait()

	require.EqualValues(t, writers, runs.Load(), "no write failed, so none ran twice")
	seen := map[uint64]bool{}
	for _, id := range ids {
		require.False(t, seen[id], "id %d handed out twice", id)
		seen[id] = true
	}
	var parts []domain.Partition
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) (err error) { parts, err = tx.Partitions(); return err }))
	require.Len(t, parts, writers+1)
	commits := txID(t, l) - before
	require.Less(t, commits, writers, "each write committed alone")
	t.Logf("%d writes in %d commits", writers, commits)
}

// Writes that queue behind a batch run in the order they arrived, in one
// transaction; a write alone runs once, in a transaction of its own.
func TestBatchKeepsArrivalOrder(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	addOne(t, l)
	before := txID(t, l)
	release, held := holdBatch(t, l)
	ids := make([]uint64, 5)
	var dones []chan error
	for i := range ids {
		dones = append(dones, queueWrite(t, l, putOne(&ids[i])))
	}
	close(release)
	require.NoError(t, <-held)
	for _, d := range dones {
		require.NoError(t, <-d)
	}
	require.Equal(t, []uint64{2, 3, 4, 5, 6}, ids)
	require.Equal(t, before+2, txID(t, l), "the held write, then the five queued behind it in one commit")

	var runs int
	require.NoError(t, l.Update(context.Background(), func(*storage.Tx) error { runs++; return nil }))
	require.Equal(t, 1, runs)
}

// A write that fails in a batch takes nothing of the others with it: they
// commit together without it, and it runs again alone, its error its own.
func TestFailingWriteRollsBackOnlyItself(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	errRefused := errors.New("refused")
	var first, last, failedID uint64
	var failRuns atomic.Int64
	release, held := holdBatch(t, l)
	okFirst := queueWrite(t, l, putOne(&first))
	failing := queueWrite(t, l, func(tx *storage.Tx) error {
		failRuns.Add(1)
		if err := putOne(&failedID)(tx); err != nil {
			return err
		}
		return errRefused
	})
	okLast := queueWrite(t, l, putOne(&last))
	close(release)
	require.NoError(t, <-held)
	require.NoError(t, <-okFirst)
	require.NoError(t, <-okLast)
	require.ErrorIs(t, <-failing, errRefused)
	require.EqualValues(t, 2, failRuns.Load(), "in the batch, then alone")

	var parts []domain.Partition
	require.NoError(t, l.View(context.Background(), func(tx *storage.Tx) (err error) { parts, err = tx.Partitions(); return err }))
	var got []uint64
	for _, p := range parts {
		got = append(got, p.ID)
	}
	require.ElementsMatch(t, []uint64{first, last}, got, "the failing write's booking rolled back, the others' kept")
	require.NotZero(t, first)
	require.Less(t, first, last, "in the order they arrived")
}

// A panic in one write's function (bbolt meeting damage) comes back to
// that write as damage, and the others still land.
func TestPanickingWriteIsDamageToItsCallerAlone(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	var before, after uint64
	release, held := holdBatch(t, l)
	okBefore := queueWrite(t, l, putOne(&before))
	panicking := queueWrite(t, l, func(*storage.Tx) error { panic("page 7 points past the end of the file") })
	okAfter := queueWrite(t, l, putOne(&after))
	close(release)
	require.NoError(t, <-held)
	err := <-panicking
	require.ErrorIs(t, err, storage.ErrDamaged)
	require.ErrorContains(t, err, "page 7 points past the end")
	require.NoError(t, <-okBefore)
	require.NoError(t, <-okAfter)
	require.Equal(t, []uint64{1, 2}, []uint64{before, after})
	addOne(t, l) // the file is not left locked
}

// A write that fails before writing anything (a refusal) rolls nothing
// back: the others run once, and its error is found after the writes
// that arrived before it.
func TestRefusedWriteRunsNothingAgain(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	errFull := errors.New("full")
	var first, last uint64
	var runs atomic.Int64
	counted := func(fn func(*storage.Tx) error) func(*storage.Tx) error {
		return func(tx *storage.Tx) error { runs.Add(1); return fn(tx) }
	}
	release, held := holdBatch(t, l)
	okFirst := queueWrite(t, l, counted(putOne(&first)))
	var sawFirst bool
	refused := queueWrite(t, l, counted(func(tx *storage.Tx) error {
		_, err := tx.Partition(1)
		sawFirst = err == nil
		return errFull
	}))
	okLast := queueWrite(t, l, counted(putOne(&last)))
	close(release)
	require.NoError(t, <-held)
	require.NoError(t, <-okFirst)
	require.NoError(t, <-okLast)
	require.ErrorIs(t, <-refused, errFull)
	require.EqualValues(t, 3, runs.Load(), "each ran once")
	require.True(t, sawFirst, "the refusal came after the write before it")
	require.Equal(t, []uint64{1, 2}, []uint64{first, last})
}
