package core_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// eachWaitLedger runs fn on each engine, side by side, with a ledger that waiters of
// other uids can use — a file in a directory they may write, or a prefix
// of etcd — and bin, the test binary where they may run it.
func eachWaitLedger(t *testing.T, fn func(t *testing.T, open storetest.Opener, bin string)) {
	t.Run("bbolt", func(t *testing.T) {
		t.Parallel()
		dir, bin := coretest.OtherUserDir(t)
		path := filepath.Join(dir, "chronos.db")
		fn(t, func() storage.Store { return bolt.New(path) }, bin)
	})
	t.Run("etcd", func(t *testing.T) {
		t.Parallel()
		_, bin := coretest.OtherUserDir(t)
		fn(t, storetest.Etcd(t, etcdtest.Shared(t)), bin)
	})
}

// waitingProcesses wait behind waitingHolders bookings in the fair-share
// test: enough that each user has several waiters in line and the line
// outlasts the bookings in its way; the two hundred at once are
// BenchmarkWaiters200's (make bench-waiters).
const waitingProcesses, waitingHolders = 15, 5

// Real waiting processes of three real users (root, nobody, daemon)
// share one ledger; as bookings end, one by one, the transaction that ends
// each grants the next request in fair-share order: every waiter of the
// user who used least first, and within a user, the oldest first. Each
// waiter learns of its booking itself, and it is its own uid's.
func TestWaitersGrantedInFairShareOrder(t *testing.T) {
	t.Parallel()
	eachWaitLedger(t, testWaitersGrantedInFairShareOrder)
}

func testWaitersGrantedInFairShareOrder(t *testing.T, open storetest.Opener, bin string) {
	nobody, daemon := servicetest.UIDOf(t, "nobody"), servicetest.UIDOf(t, "daemon")
	s := open()
	db := s.String()
	r := servicetest.ClientOn(s, nil, coretest.Root)
	var holders []uint64
	for range waitingHolders {
		p, err := r.Create(core.Request{Device: 0, Memory: human.Fraction(1.0 / waitingHolders), Duration: time.Hour})
		require.NoError(t, err)
		holders = append(holders, p.ID)
	}
	coretest.LetAllWrite(t, s)
	now := clock.System().Now() // the time of the waiters' clients
	require.NoError(t, s.Update(context.Background(), func(tx *storage.Tx) error {
		if err := tx.PutUserUsage(domain.UserUsage{UID: nobody, User: "nobody", GPUSeconds: 100 * 3600, At: now}); err != nil {
			return err
		}
		return tx.PutUserUsage(domain.UserUsage{UID: daemon, User: "daemon", GPUSeconds: 1000 * 3600, At: now})
	}))

	users := []int{0, nobody, daemon}
	rank := map[int]int{0: 0, nobody: 1, daemon: 2} // least used first
	var waiters []*servicetest.Waiter
	for i := range waitingProcesses {
		waiters = append(waiters, servicetest.StartWaiter(t, bin, db, users[i%3], fmt.Sprint(1.0/waitingHolders)))
	}
	want := slices.Clone(waiters)
	slices.SortStableFunc(want, func(a, b *servicetest.Waiter) int { return rank[a.UID] - rank[b.UID] })

	line, err := r.Queue()
	require.NoError(t, err)
	require.Len(t, line, waitingProcesses)
	for i, e := range line {
		require.Equal(t, want[i].Request, e.ID, "position %d", i+1)
	}

	// End one booking at a time; each end grants exactly the next in line.
	for i, w := range want {
		var end uint64
		if i < len(holders) {
			end = holders[i]
		} else {
			end = want[i-len(holders)].RequestIn(t, r).Partition
		}
		_, err := r.Release(end)
		require.NoError(t, err)
		got := w.Booked(t)
		p, err := r.Get(got)
		require.NoError(t, err)
		require.Equal(t, w.UID, p.UID, "waiter %d (request %d) got a booking of uid %d", i, w.Request, p.UID)
		req := w.RequestIn(t, r)
		require.Equal(t, domain.Granted, req.State)
		require.Equal(t, got, req.Partition)
	}
	line, err = r.Queue()
	require.NoError(t, err)
	require.Empty(t, line)

	// Each request was granted once: one booking names it.
	evs, err := r.Events(0, 0)
	require.NoError(t, err)
	granted := map[string]int{}
	for _, e := range evs {
		if e.Kind == domain.EventCreated && strings.Contains(e.Detail, "request ") {
			granted[e.Detail[strings.Index(e.Detail, "request "):]]++
		}
	}
	require.Len(t, granted, waitingProcesses)
}

// A waiter killed with SIGKILL cannot take its request with it: the next
// placement (here the one a monitor or another waiter makes when it tends
// the line) finds its process gone and takes the request out, with an
// event, before it could be granted a booking nobody would use.
func TestKilledWaiterLeavesTheLine(t *testing.T) {
	t.Parallel()
	eachWaitLedger(t, testKilledWaiterLeavesTheLine)
}

func testKilledWaiterLeavesTheLine(t *testing.T, open storetest.Opener, bin string) {
	nobody := servicetest.UIDOf(t, "nobody")
	s := open()
	db := s.String()
	r := servicetest.ClientOn(s, nil, coretest.Root)
	hold, err := r.Create(core.Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	coretest.LetAllWrite(t, s)
	w := servicetest.StartWaiter(t, bin, db, nobody, "0.5")
	next := servicetest.StartWaiter(t, bin, db, 0, "0.5")

	require.NoError(t, w.Cmd.Process.Kill())
	_ = w.Cmd.Wait()
	_, err = r.TendLine()
	require.NoError(t, err)
	req := w.RequestIn(t, r)
	require.Equal(t, domain.Cancelled, req.State)
	require.Contains(t, req.Reason, fmt.Sprintf("its waiting process (pid %d on", w.Cmd.Process.Pid))
	line, err := r.Queue()
	require.NoError(t, err)
	require.Len(t, line, 1)
	require.Equal(t, next.Request, line[0].ID)

	// The room goes to the living waiter.
	_, err = r.Release(hold.ID)
	require.NoError(t, err)
	p, err := r.Get(next.Booked(t))
	require.NoError(t, err)
	require.Equal(t, 0, p.UID)
	var left []domain.Event
	evs, err := r.Events(0, 0)
	require.NoError(t, err)
	for _, e := range evs {
		if e.Kind == domain.EventLeft {
			left = append(left, e)
		}
	}
	require.Len(t, left, 1)
	require.Contains(t, left[0].Detail, fmt.Sprintf("request %d", w.Request))
}

// Ctrl-C (SIGINT) or SIGTERM to a waiter takes its request out of the line
// cleanly, and it exits saying so.
func TestInterruptedWaiterLeavesCleanly(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testInterruptedWaiterLeavesCleanly)
}

func testInterruptedWaiterLeavesCleanly(t *testing.T, open storetest.Opener) {
	s := open()
	db := s.String()
	r := servicetest.ClientOn(s, nil, coretest.Root)
	_, err := r.Create(core.Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		w := servicetest.StartWaiter(t, os.Args[0], db, 0, "0.5")
		require.NoError(t, w.Cmd.Process.Signal(sig))
		require.Equal(t, coretest.RoleLeft, coretest.ExitCode(w.Cmd.Wait()), "%s", sig)
		req := w.RequestIn(t, r)
		require.Equal(t, domain.Cancelled, req.State, "%s", sig)
		require.Equal(t, "its waiter stopped waiting", req.Reason)
	}
	line, err := r.Queue()
	require.NoError(t, err)
	require.Empty(t, line)
}

// Joining the line waits out a ledger that stays busy past one lock
// timeout (a crowd joining at once), where a plain create gives up: the
// caller means to wait. Here a holder keeps the lock for one and a half
// timeouts: past the first try, and early in the second, so that a loaded
// machine's slow release still falls within the three tries.
func TestJoinWaitsOutABusyLedger(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	c := servicetest.ClientAt(db, nil, coretest.Alice)
	_, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)

	holder, marker := coretest.HoldLedger(t, db)

	quick := core.NewClient(core.Options{Ledger: &bolt.Ledger{Path: db, Timeout: 500 * time.Millisecond}, Devices: servicetest.Devices, As: &coretest.Bob})
	joined := make(chan error, 1)
	go func() {
		_, e, err := quick.Enqueue(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}, admission.WaitOptions{})
		if err == nil && e == nil {
			err = errors.New("booked on a full GPU")
		}
		joined <- err
	}()
	time.Sleep(750 * time.Millisecond)
	require.NoError(t, os.WriteFile(marker+".go", nil, 0o600))
	require.NoError(t, holder.Wait())
	require.NoError(t, <-joined)
}
