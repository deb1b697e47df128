package bolt

// Group commit: one process's concurrent writes to a ledger file share a
// transaction, and so its lock, its opening checks and its fdatasync. While
// a batch runs, new writes queue; when it ends, the first of them takes
// everything queued as the next batch. There is no timer: a lone write
// waits for nothing.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
)

// maxBatch bounds the writes one transaction takes, and so how long the
// file's lock is held for them and how much one failure makes run again.
// A keeper's batch of 64 of the line's joins held the lock long enough
// that members' reads, racing it, waited out their 3 s (see maxStreak).
const maxBatch = 16

// Under a backlog batches follow one another at once, and this process's
// next open wins the race for the file's lock against other processes
// woken by the last release (members' commands reading a guarded ledger
// while its keeper writes): they could wait out their whole timeout.
// Once this process has held the file through batches back to back for
// maxStreak, the next batch waits readersTurn, in which they read. A
// lone write never waits, and writes arriving meanwhile join the batch.
const (
	maxStreak   = 50 * time.Millisecond
	readersTurn = 10 * time.Millisecond
)

// batcher queues the writes of this process to one file.
type batcher struct {
	mu      sync.Mutex
	queue   []*call
	leading bool          // a batch is under way; the queue waits for its end
	streak  time.Time     // when the batches back to back began
	pause   time.Duration // before the next batch, when it follows at once

	kept kept // the file held open between batches (KeepOpen); used by the batch under way alone
}

// call is one Update waiting in a batcher.
type call struct {
	l    *Ledger
	fn   func(*storage.Tx) error
	err  error
	done chan struct{} // closed once err is final
	lead chan struct{} // closed when this call is to run the next batch

	answered bool // err is its function's outcome (set by the batch's runner)
}

// batchers holds a batcher by the file's cleaned path: several Ledger
// values may name one file.
var batchers sync.Map

func batcherFor(path string) *batcher {
	key := filepath.Clean(path)
	if b, ok := batchers.Load(key); ok {
		return b.(*batcher)
	}
	b, _ := batchers.LoadOrStore(key, &batcher{})
	return b.(*batcher)
}

// do runs fn in the next batch and returns its own outcome.
func (b *batcher) do(l *Ledger, fn func(*storage.Tx) error) error {
	c := &call{l: l, fn: fn, done: make(chan struct{}), lead: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	leads := !b.leading
	b.leading = true
	b.mu.Unlock()
	if !leads {
		select {
		case <-c.done:
			return c.err
		case <-c.lead:
		}
	}
	b.runNext(!leads)
	<-c.done
	return c.err
}

// runNext runs the queue's head (the caller's own call) and the calls
// behind it as one batch, in the order they arrived, then hands the queue
// to its new head. Calls whose Ledger opens the file differently (another
// timeout, mode or backup age) wait for a batch of their own.
func (b *batcher) runNext(follows bool) {
	b.mu.Lock()
	if follows && b.pause > 0 {
		// See maxStreak: others read now.
		pause := b.pause
		b.mu.Unlock()
		<-clock.Kernel.After(pause) // pacing, not a time of the books
		b.mu.Lock()
	}
	if !follows || b.pause > 0 {
		b.streak = clock.Kernel.Now() // a streak of batches back to back begins
	}
	b.pause = 0
	n := 1
	for n < len(b.queue) && n < maxBatch && sameOpening(b.queue[n].l, b.queue[0].l) {
		n++
	}
	batch := make([]*call, n)
	copy(batch, b.queue)
	b.queue = append(b.queue[:0:0], b.queue[n:]...)
	b.mu.Unlock()

	batch[0].l.commit(batch, &b.kept)
	now := clock.Kernel.Now() // pacing, not a time of the books

	b.mu.Lock()
	if now.Sub(b.streak) >= maxStreak {
		b.pause = readersTurn
	}
	if len(b.queue) == 0 {
		b.leading = false
	} else {
		close(b.queue[0].lead)
	}
	b.mu.Unlock()
}

func sameOpening(a, b *Ledger) bool {
	return a.Timeout == b.Timeout && a.mode() == b.mode() && a.BackupEvery == b.BackupEvery && a.KeepOpen == b.KeepOpen
}

// commit runs calls in one transaction, in order, as bbolt's DB.Batch
// does: should one fail (or panic) after writing, the transaction is
// rolled back and the others run again together without it; it then runs
// alone, in a transaction of its own, and its outcome is its caller's
// only. Functions are written to be run again (the etcd engine retries
// them too). One that fails before writing anything, as a refusal does,
// changed nothing: it gets its error and the others go on, so a member's
// flood of refused requests makes nobody's run again. All of it happens
// under one opening of the file: one lock, one set of checks, and an
// fdatasync for each transaction that commits.
func (l *Ledger) commit(calls []*call, k *kept) {
	answer := func(c *call, err error) {
		c.err, c.answered = err, true
	}
	var alone []*call
	err := l.withWriter(k, func(db *bbolt.DB) (committed bool, err error) {
		pending := append([]*call(nil), calls...)
		for len(pending) > 0 {
			var failed *call // one that failed after writing: all roll back
			succeeded := 0
			err := db.Update(func(btx *bbolt.Tx) error {
				if err := prepare(btx); err != nil {
					return err
				}
				for _, c := range pending {
					wrote, err := l.runCall(btx, c.fn)
					switch {
					case err == nil:
						succeeded++
					case !wrote && len(pending) > 1:
						// It failed before writing anything (a refusal,
						// usually): the transaction is as it was, so the
						// others go on in it, and its error, found after
						// the writes that came before it, is its own.
						answer(c, err)
					default:
						failed = c
						return err
					}
				}
				if succeeded == 0 {
					return errNothingToCommit
				}
				return nil
			})
			if errors.Is(err, errNothingToCommit) {
				break // every one was answered
			}
			pending = slices.DeleteFunc(pending, func(c *call) bool { return c.answered })
			if failed == nil || len(pending) == 1 {
				// Done, or an error of the transaction's own (or of a
				// lone call): it is every pending call's.
				for _, c := range pending {
					answer(c, err)
				}
				committed = committed || err == nil
				break
			}
			alone = append(alone, failed)
			pending = slices.DeleteFunc(pending, func(c *call) bool { return c == failed })
		}
		for _, c := range alone {
			err := db.Update(func(btx *bbolt.Tx) error {
				if err := prepare(btx); err != nil {
					return err
				}
				_, err := l.runCall(btx, c.fn)
				return err
			})
			answer(c, err)
			committed = committed || err == nil
		}
		return committed, nil
	})
	// The file could not be opened, or bbolt panicked outside any one
	// call's function: every call not answered yet gets the error. A
	// file that would not close is every committed call's error, as it
	// was when each write opened the file alone.
	var closing *closeError
	for _, c := range calls {
		switch {
		case !c.answered:
			c.err = err
		case c.err == nil && errors.As(err, &closing):
			c.err = err
		}
		close(c.done)
	}
}

// closeError is a failure to close the ledger after its transactions.
type closeError struct{ err error }

func (e *closeError) Error() string { return e.err.Error() }
func (e *closeError) Unwrap() error { return e.err }

// errNothingToCommit rolls back a transaction whose every function
// failed before writing: there is nothing to sync.
var errNothingToCommit = errors.New("nothing to commit")

// runCall runs one call's function in btx, and says whether it may have
// changed the transaction (a write through storage.Tx, the schema
// written into a new ledger, a panic). A panic there (bbolt meeting a
// damaged page, a fault reading a file cut short) is that function's
// error: bbolt rolls the transaction back as it would for any error.
func (l *Ledger) runCall(btx *bbolt.Tx, fn func(*storage.Tx) error) (wrote bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			wrote, err = true, fmt.Errorf("%w: %s (%v)", storage.ErrDamaged, l.Path, r)
		}
	}()
	wrote = btx.Bucket(storage.BucketMeta).Get(storage.KeySchema) == nil // NewTx writes it
	err = runTx(btx, func(tx *storage.Tx) error {
		ferr := fn(tx)
		wrote = wrote || tx.Written() > 0
		return ferr
	})
	return wrote, err
}

// withWriter opens the ledger for writing, runs use, refreshes the backup
// when use committed anything, and closes the file; with KeepOpen, it
// takes the file this process kept open in k and keeps it there again
// (see keep.go). It runs within a batch, which is one at a time for a file.
func (l *Ledger) withWriter(k *kept, use func(*bbolt.DB) (committed bool, err error)) (err error) {
	// bbolt panics on some kinds of damage (a page pointing outside the
	// file, say), and reading a mapped page past the end of a file cut
	// short faults. A damaged file must give an error, never a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var db *bbolt.DB
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s (%v)", storage.ErrDamaged, l.Path, r)
			// Let go of the file, its mapping and its locks (the mapping
			// keeps the file, and so its lock, alive): a process that goes
			// on, a monitor, must not keep others out. bbolt's transaction
			// rolled back as the panic passed, so closing is safe.
			if db != nil {
				db.Close()
			}
			*k = kept{}
		}
	}()
	var file *os.File
	if k.db != nil {
		if db, file, err = k.reuse(l); err != nil {
			return err
		}
		*k = kept{} // in use: kept again below, or closed
	}
	if db == nil {
		if db, file, err = l.open(false, l.timeout()); err != nil {
			return err
		}
	}
	committed, err := use(db)
	if committed {
		// Still under the exclusive lock, so two writers never copy at
		// once and the second sees the first's fresh backup.
		l.maybeBackup(db, file)
	}
	if l.KeepOpen && err == nil && k.keep(db, file) == nil {
		return nil
	}
	closeErr := db.Close()
	if err != nil {
		return err
	}
	if closeErr != nil {
		return &closeError{fmt.Errorf("close ledger %s: %w", l.Path, closeErr)}
	}
	return nil
}
