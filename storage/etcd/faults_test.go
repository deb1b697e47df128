package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

func TestMain(m *testing.M) { etcdtest.Main(m) }

func openOn(t testing.TB, c *etcdtest.Cluster, timeout time.Duration) *Store {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	s, err := Open(Config{Endpoints: c.Endpoints(), Prefix: "/fault-" + hex.EncodeToString(b), Timeout: timeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// addBooking writes what a booking is made of — the record, its live index
// entry and its event — in one transaction, as core does.
func addBooking(s storage.Store) (uint64, error) {
	var id uint64
	err := s.Update(context.Background(), func(tx *storage.Tx) error {
		p := domain.Partition{SharePPM: 1000, State: domain.Live, Created: time.Now(), Expires: time.Now().Add(time.Hour)}
		if err := tx.PutPartition(&p); err != nil {
			return err
		}
		id = p.ID
		return tx.AddEvent(domain.Event{Kind: domain.EventCreated, Partition: p.ID})
	})
	return id, err
}

// requireWhole checks that every booking has its live entry and its event,
// and nothing else is there.
func requireWhole(t *testing.T, s storage.Store) (bookings int) {
	t.Helper()
	require.NoError(t, s.View(context.Background(), func(tx *storage.Tx) error {
		parts, err := tx.Partitions()
		require.NoError(t, err)
		live, err := tx.LivePartitions()
		require.NoError(t, err)
		evs, err := tx.Events(0, 0)
		require.NoError(t, err)
		require.Equal(t, len(parts), len(live))
		require.Equal(t, len(parts), len(evs))
		for i, p := range parts {
			require.Equal(t, p.ID, evs[i].Partition)
		}
		bookings = len(parts)
		return nil
	}))
	return bookings
}

// An etcd nobody answers on gives a clear error within the timeout, for
// reads and writes, never a hang.
func TestUnreachableAtStart(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	s, err := Open(Config{Endpoints: []string{addr}, Timeout: 500 * time.Millisecond})
	require.NoError(t, err, "opening does not wait for etcd")
	defer func() { _ = s.Close() }()
	for name, op := range map[string]func() error{
		"update": func() error { _, err := addBooking(s); return err },
		"view": func() error {
			return s.View(context.Background(), func(tx *storage.Tx) error { _, err := tx.Partitions(); return err })
		},
	} {
		start := time.Now()
		err := op()
		took := time.Since(start)
		require.ErrorIs(t, err, storage.ErrUnavailable, name)
		require.ErrorContains(t, err, "etcd at "+addr+" did not answer within 500ms", name)
		require.Less(t, took, 2*time.Second, name)
	}
	_, err = addBooking(s)
	require.ErrorContains(t, err, "nothing was written")
}

// etcd killed between a transaction's reads and its commit, and started
// again: the commit waits for it and lands whole, once.
func TestKilledBeforeCommitAndRestarted(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	s := openOn(t, c, 10*time.Second)
	_, err := addBooking(s)
	require.NoError(t, err)
	var kills atomic.Int32
	s.beforeCommit = func() {
		if kills.Add(1) == 1 {
			c.Members[0].Kill()
			go func() {
				time.Sleep(300 * time.Millisecond)
				if err := c.Members[0].Restart(); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	id, err := addBooking(s)
	require.NoError(t, err)
	require.Equal(t, uint64(2), id)
	require.Equal(t, 2, requireWhole(t, s))
}

// etcd stopped while a commit is on its way, past the commit's deadline,
// then continued (or killed and started again): whatever the command said —
// written, nothing written, or not known — the ledger agrees, and no booking
// is half there. Continued in time for the check, the answer is never "not
// known".
func TestStoppedDuringCommit(t *testing.T) {
	t.Parallel()
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "continued", true: "killed and restarted"}[kill], func(t *testing.T) {
			c := etcdtest.Start(t, 1)
			s := openOn(t, c, DefaultTimeout)
			prefix := s.cfg.Prefix
			_, err := addBooking(s)
			require.NoError(t, err)
			m := c.Members[0]
			var once atomic.Int32
			back := make(chan struct{})
			var start time.Time
			s.beforeCommit = func() {
				if once.Add(1) == 1 {
					m.Pause()
					go func() {
						defer close(back)
						// The commit has timed out (its attempts end a fifth
						// of the timeout early); the check, in that fifth, has
						// not.
						time.Sleep(time.Until(start.Add(DefaultTimeout * 22 / 25)))
						if !kill {
							m.Resume()
							return
						}
						m.Kill()
						if err := m.Restart(); err != nil {
							t.Error(err)
						}
					}()
				}
			}
			start = time.Now()
			_, err = addBooking(s)
			s.beforeCommit = nil
			<-back
			require.NoError(t, c.WaitHealthy(20*time.Second))
			// Look with a patient handle: this one's 1 s may pass while
			// the client reconnects.
			s = openOn(t, c, 10*time.Second)
			s.cfg.Prefix = prefix
			n := requireWhole(t, s)
			t.Logf("said: %v; %d bookings", err, n)
			switch {
			case err == nil:
				require.Equal(t, 2, n, "said written")
			case strings.Contains(err.Error(), "nothing was written"):
				require.ErrorIs(t, err, storage.ErrUnavailable)
				require.Equal(t, 1, n, "said nothing was written")
			case strings.Contains(err.Error(), "not known whether"):
				require.ErrorIs(t, err, storage.ErrUnavailable)
				require.True(t, kill, "continued in time, the outcome is known")
			default:
				t.Fatalf("unexpected error: %v", err)
			}
			// And the ledger carries on.
			_, err = addBooking(s)
			require.NoError(t, err)
			require.Equal(t, n+1, requireWhole(t, s))
		})
	}
}

// One member of three killed, whichever it is: every operation still
// succeeds (after at most an election), and the member rejoins.
func TestOneOfThreeMembersKilled(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 3)
	// An election takes a second or two, more on a loaded machine.
	s := openOn(t, c, 15*time.Second)
	made := 0
	book := func(k int) {
		for range k {
			_, err := addBooking(s)
			require.NoError(t, err)
			made++
		}
	}
	book(5)
	for _, victim := range c.Members {
		victim.Kill()
		book(10)
		require.NoError(t, s.View(context.Background(), func(tx *storage.Tx) error {
			parts, err := tx.Partitions()
			require.Len(t, parts, made)
			return err
		}))
		require.NoError(t, victim.Restart())
		require.NoError(t, c.WaitHealthy(20*time.Second))
	}
	require.Equal(t, made, requireWhole(t, s))
}

// Writers in parallel on a three-member cluster, with a member killed
// meanwhile: every write succeeds, every booking gets its own id and is
// written whole.
func TestRacingWritersOnACluster(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 3)
	first := openOn(t, c, 15*time.Second)
	const writers, each = 6, 15
	errs := make(chan error, writers*each)
	ids := make(chan uint64, writers*each)
	var wg sync.WaitGroup
	for range writers {
		s, err := Open(Config{Endpoints: c.Endpoints(), Prefix: first.Prefix(), Timeout: 15 * time.Second})
		require.NoError(t, err)
		defer func() { _ = s.Close() }()
		wg.Go(func() {
			for range each {
				id, err := addBooking(s)
				errs <- err
				ids <- id
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	c.Members[1].Kill()
	wg.Wait()
	close(errs)
	close(ids)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := map[uint64]bool{}
	for id := range ids {
		require.False(t, seen[id], "id %d handed out twice", id)
		seen[id] = true
	}
	require.Equal(t, writers*each, requireWhole(t, first))
}

// A writer whose turn was lost while it held it (its lease expired: the
// member keeping it alive was killed, say) takes a new turn, rather than
// comparing against a turn that is gone until its time runs out.
func TestWriterTakesTheTurnAgainWhenItsTurnIsGone(t *testing.T) {
	t.Parallel()
	c := etcdtest.Shared(t)
	s := openOn(t, c, 3*time.Second)
	other, err := Open(Config{Endpoints: c.Endpoints(), Prefix: s.Prefix()})
	require.NoError(t, err)
	defer func() { _ = other.Close() }()
	var attempts atomic.Int32
	s.beforeCommit = func() {
		switch attempts.Add(1) {
		case 1, 2: // another writer commits first: s loses, and then takes the turn
			_, err := addBooking(other)
			require.NoError(t, err)
		case 3: // s holds the turn; its place vanishes before s commits
			_, err := s.Client().Delete(context.Background(), s.turnsKey(), clientv3.WithPrefix())
			require.NoError(t, err)
		}
	}
	_, err = addBooking(s)
	require.NoError(t, err)
	require.Greater(t, attempts.Load(), int32(3))
	require.Equal(t, 3, requireWhole(t, s))
}

// A turn its writer could not give back (etcd went away just then) lapses
// on its own, though the writer's process lives on: other writers commit
// again within the turn's TTL, instead of losing until that process ends.
func TestTurnLeftBehindLapses(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	s := openOn(t, c, time.Second)
	// other's timeout bounds how long the turn may outlive its writer's
	// Update: the turn's TTL, after etcd's restart extended its leases.
	other, err := Open(Config{Endpoints: c.Endpoints(), Prefix: s.Prefix(), Timeout: 3 * turnTTL})
	require.NoError(t, err)
	defer func() { _ = other.Close() }()
	var attempts atomic.Int32
	var killed time.Time
	s.beforeCommit = func() {
		switch attempts.Add(1) {
		case 1, 2: // another writer commits first: s loses, and then takes the turn
			_, err := addBooking(other)
			require.NoError(t, err)
		case 3: // s holds the turn; etcd goes away before s commits or gives it back
			c.Members[0].Kill()
			killed = time.Now()
		}
	}
	_, err = addBooking(s)
	require.Error(t, err)
	require.Equal(t, int32(3), attempts.Load())
	s.beforeCommit = nil
	require.NoError(t, c.Members[0].Restart())
	require.NoError(t, c.WaitHealthy(20*time.Second))
	// s stays open, its process alive; its turn must not.
	start := time.Now()
	_, err = addBooking(other)
	require.NoError(t, err)
	t.Logf("outage %s, then committed after %s", start.Sub(killed), time.Since(start))
}

// "Within the timeout" is a deadline on the whole update: a writer that
// lost to another writer twice, took the turn, and then met an etcd that
// stopped answering before its commit says so within its timeout: finding
// out whether the commit happened and giving the turn back wait no longer.
func TestUpdateUnderContentionEndsWithinItsTimeout(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	// Three seconds, so that the other writer's two commits (milliseconds
	// on a quiet machine, hundreds beside CPU hogs) leave most of it for
	// the wait on the paused member that the test is about.
	const timeout = 3 * time.Second
	s := openOn(t, c, timeout)
	other, err := Open(Config{Endpoints: c.Endpoints(), Prefix: s.Prefix()})
	require.NoError(t, err)
	defer func() { _ = other.Close() }()
	var attempts atomic.Int32
	s.beforeCommit = func() {
		switch attempts.Add(1) {
		case 1, 2: // another writer commits first: s loses, and then takes the turn
			_, err := addBooking(other)
			require.NoError(t, err)
		case 3: // s holds the turn; etcd stops answering before s commits
			c.Members[0].Pause()
		}
	}
	start := time.Now()
	_, err = addBooking(s)
	took := time.Since(start)
	c.Members[0].Resume()
	require.ErrorIs(t, err, storage.ErrUnavailable)
	require.ErrorContains(t, err, "did not answer within 3s")
	require.Equal(t, int32(3), attempts.Load())
	// The two commits of the other writer are in the time; a quarter of
	// the timeout is left for a loaded machine's scheduling. Each fresh
	// timeout of before (the check, the turn) took a whole one more.
	require.Less(t, took, timeout*5/4, "said after %s", took)
	t.Logf("said after %s: %v", took.Round(time.Millisecond), err)
	require.NoError(t, c.WaitHealthy(20*time.Second))
	s.beforeCommit = nil
	_, err = addBooking(other)
	require.NoError(t, err, "the turn was given back, or lapsed")
}

// A long transaction among writers in tight loops of short ones is not
// starved: after a few losses it takes its turn and commits.
func TestLongWriterIsNotStarved(t *testing.T) {
	t.Parallel()
	c := etcdtest.Shared(t)
	long := openOn(t, c, 5*time.Second)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		s, err := Open(Config{Endpoints: c.Endpoints(), Prefix: long.Prefix()})
		require.NoError(t, err)
		defer func() { _ = s.Close() }()
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = addBooking(s)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(100 * time.Millisecond)
	for range 5 {
		start := time.Now()
		err := long.Update(context.Background(), func(tx *storage.Tx) error {
			if _, err := tx.LivePartitions(); err != nil {
				return err
			}
			time.Sleep(30 * time.Millisecond) // a monitor sampling GPUs, say
			return tx.AddEvent(domain.Event{Kind: domain.EventWarned})
		})
		require.NoError(t, err)
		t.Logf("committed after %s", time.Since(start).Round(time.Millisecond))
	}
}

// A commit etcd did not answer, whose fate the check could not learn
// either, is "not known", also when the caller's own time (a command's
// whole timeout) ran out meanwhile: never "nothing was written", which the
// commit may contradict once etcd is back (TestLeaderKilledMidLoad found
// such a booking).
func TestCommitInDoubtWhenTheCallersTimeEnds(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	s := openOn(t, c, 2*time.Second)
	_, err := addBooking(s)
	require.NoError(t, err)
	s.beforeCommit = func() { c.Members[0].Kill() }
	ctx, cancel := context.WithTimeoutCause(context.Background(), time.Second, errors.New("the whole command's time"))
	defer cancel()
	err = s.Update(ctx, func(tx *storage.Tx) error {
		p := domain.Partition{SharePPM: 1000, State: domain.Live}
		return tx.PutPartition(&p)
	})
	require.ErrorIs(t, err, storage.ErrUnavailable)
	require.ErrorContains(t, err, "it is not known whether this change was written")
	require.NotContains(t, err.Error(), "nothing was written")
}
