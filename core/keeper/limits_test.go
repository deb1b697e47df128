package keeper

import (
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage"
)

// daemonMember is daemon, another member (the group is its own).
var daemonMember = &syscall.Credential{Uid: 1, Gid: daemonGID, Groups: []uint32{}}

const oneGPUFrame = `{"v":1,"op":"create","create":{"device":1,"fraction":0.1,"duration":3600000000000}}`

// More connections than the keeper takes at once: those over the bound
// are told it is busy, at once, and the keeper serves again once some
// close.
func TestManyConnectionsAreBounded(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	const over = 100
	conns := make([]*net.UnixConn, 0, DefaultMaxConns+over)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range DefaultMaxConns {
		conns = append(conns, k.dial(t)) // held open, sending nothing
	}
	var busy sync.WaitGroup
	for range over {
		c := k.dial(t)
		conns = append(conns, c)
		busy.Go(func() {
			var r Reply
			require.NoError(t, ReadFrame(c, &r))
			require.Equal(t, ReplyError, r.Kind)
			require.ErrorIs(t, r.err(), storage.ErrBusy)
			require.Contains(t, r.Error, "the keeper is busy: 4096 connections open; try again shortly")
		})
	}
	busy.Wait()
	for _, c := range conns[:10] {
		c.Close()
	}
	require.Eventually(t, func() bool {
		c := k.dial(t)
		defer c.Close()
		var r Reply
		return WriteFrame(c, Request{V: Version, Op: OpCancel, ID: 99}) == nil && ReadFrame(c, &r) == nil && r.Class == "no-request"
	}, 30*time.Second, 10*time.Millisecond, "served again once some closed")
}

// One member's connections are bounded apart from the others': a member
// who holds as many as the keeper allows one user is told so, and
// another member is served meanwhile.
func TestOneMemberCannotTakeEveryConnection(t *testing.T) {
	t.Parallel()
	k := startKeeper(t, func(s *Server) { s.MaxPerUID = 3 })
	r := sendAs(t, k, member, oneGPUFrame, "KEEPER_TEST_HOLD=3")
	require.Equal(t, ReplyError, r.Kind)
	require.ErrorIs(t, r.err(), storage.ErrBusy)
	require.Contains(t, r.Error, "nobody has 3 connections open to it")
	r = sendAs(t, k, member, oneGPUFrame, "KEEPER_TEST_HOLD=2")
	require.Equal(t, ReplyDone, r.Kind, "under the bound: %s", r.Error)
	r = sendAs(t, k, daemonMember, oneGPUFrame)
	require.Equal(t, ReplyDone, r.Kind, r.Error)
	require.Equal(t, 1, r.Partition.UID)
}

// A user's requests over the rate wait their turn, in the order they came,
// for as long as the rate says; a burst goes at once, and an idle user's
// bucket fills up to the burst again, no further.
func TestBucketPacesInOrder(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) // any time: only differences count
	var b bucket
	b.tokens = 2
	take := func(at time.Duration) time.Duration {
		wait, over := b.take(t0.Add(at), 10, 2, maxPace)
		require.False(t, over)
		return wait
	}
	require.Zero(t, take(0))
	require.Zero(t, take(0))
	require.Equal(t, 100*time.Millisecond, take(0))
	require.Equal(t, 200*time.Millisecond, take(0), "behind the one before")
	require.Equal(t, 150*time.Millisecond, take(150*time.Millisecond))
	require.Zero(t, take(time.Hour), "idle: the burst again")
	require.Zero(t, take(time.Hour))
	require.Equal(t, 100*time.Millisecond, take(time.Hour), "no more than the burst")

	// A wait over the limit is refused, and takes nothing.
	_, over := b.take(t0.Add(time.Hour), 10, 2, 150*time.Millisecond)
	require.True(t, over)
	require.Equal(t, 200*time.Millisecond, take(time.Hour))
}

// A member who sends more than the rate allows is told the keeper is busy
// once the wait would be too long; root is never paced, and another
// member keeps their own rate.
func TestAMembersRateIsTheirsAlone(t *testing.T) {
	l, err := spentCreates(t)
	require.ErrorContains(t, err, "sends more than 0.01 requests a second")
	done, err := l.turn(1, true, takes)
	require.NoError(t, err, "another member's turn is their own")
	done()
	_, err = l.turn(65534, false, takes)
	require.ErrorIs(t, err, storage.ErrBusy, "a wait joins the line at the rate too")
	for range 3 {
		done, err = l.turn(0, true, takes)
		require.NoError(t, err, "root is not paced")
		done()
	}
}

// A user's requests under way are bounded, and the next turn goes to one
// that frees room before any that takes, whatever the order they came:
// a member's own creates never hold back the releases of what they
// booked (with 4 turns and none first, a flood of creates and releases
// left 1,000 bookings live, and every create weighed them all).
func TestReleasesGoFirst(t *testing.T) {
	l := (&Server{MaxActive: 1, Rate: -1}).limits()
	const uid = 65534
	first, err := l.turn(uid, true, takes)
	require.NoError(t, err)
	order := make(chan string, 3)
	var wg sync.WaitGroup
	queue := func(what string, k kind) {
		wg.Go(func() {
			done, err := l.turn(uid, true, k)
			require.NoError(t, err)
			order <- what
			done()
		})
		require.Eventually(t, func() bool { // queued before the next
			l.mu.Lock()
			defer l.mu.Unlock()
			return len(l.turns[uid].waiting[k]) > 0
		}, 5*time.Second, time.Millisecond)
	}
	queue("create", takes)
	queue("another create", takes)
	queue("release", frees)
	select {
	case what := <-order:
		t.Fatalf("%s went while the turn was held", what)
	default:
	}
	other, err := l.turn(1, true, takes)
	require.NoError(t, err, "another member's turns are their own")
	other()
	first()
	wg.Wait()
	close(order)
	var got []string
	for what := range order {
		got = append(got, what)
	}
	require.Equal(t, []string{"release", "create", "another create"}, got)
	require.Empty(t, l.turns, "a user with nothing under way is forgotten")
}

// Half of a user's connections at most wait for a turn to take: then a
// create is told the keeper is busy, and a release or a wait in line is
// still taken, so that a member whose creates fill the keeper can still
// give back what they booked.
func TestCreatesLeaveRoomForReleases(t *testing.T) {
	l := (&Server{MaxActive: 1, MaxPerUID: 4, Rate: -1}).limits()
	const uid = 65534
	held, err := l.turn(uid, true, takes)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			done, err := l.turn(uid, true, takes)
			require.NoError(t, err)
			done()
		})
	}
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.turns[uid].taking == 2
	}, 5*time.Second, time.Millisecond)
	_, err = l.turn(uid, true, takes)
	require.ErrorIs(t, err, storage.ErrBusy)
	require.ErrorContains(t, err, "nobody has 2 requests waiting for it")
	wait, err := l.turn(uid, false, takes)
	require.NoError(t, err, "a wait holds no turn")
	wait()
	released := make(chan struct{})
	wg.Go(func() {
		done, err := l.turn(uid, true, frees)
		require.NoError(t, err)
		close(released)
		done()
	})
	held()
	<-released
	wg.Wait()
	require.Empty(t, l.turns)
}

// Each kind has a pace of its own: a user who spent their creates' rate
// still releases at once.
func TestReleasesHaveTheirOwnPace(t *testing.T) {
	l, _ := spentCreates(t)
	done, err := l.turn(65534, true, frees)
	require.NoError(t, err, "a release is paced apart")
	done()
	_, err = l.turn(65534, true, frees)
	require.ErrorIs(t, err, storage.ErrBusy, "and paced all the same")
	require.Empty(t, l.turns)
}

// spentCreates is a keeper's limits at one request in 100 s once member
// 65534 has made their one create: it returns the refusal of their next.
func spentCreates(t *testing.T) (*limits, error) {
	t.Helper()
	l := (&Server{Rate: 0.01}).limits()
	l.burst = 1
	done, err := l.turn(65534, true, takes)
	require.NoError(t, err)
	done()
	_, err = l.turn(65534, true, takes)
	require.ErrorIs(t, err, storage.ErrBusy)
	return l, err
}
