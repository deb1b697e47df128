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
