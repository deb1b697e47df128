package keeper

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

// withChild is the environment in which a sender starts a command of its
// own first, as chronos run does, and names its group for $GROUP.
const withChild = "KEEPER_TEST_CHILD=1"

// A member's chronos run records itself in its booking through the
// keeper: the wrapper is the caller's process, from the kernel, and its
// command's group must be the caller's child's. A group that is not, or
// another's booking, is refused and changes nothing.
func TestRunRecordsTheCallerAsItsWrapper(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	mine := sendAs(t, k, member, `{"v":1,"op":"create","create":{"device":0,"fraction":0.2,"duration":3600000000000}}`)
	require.Equal(t, ReplyDone, mine.Kind, mine.Error)
	id := mine.Partition.ID
	theirs, err := k.root.As(t.Context(), domain.Identity{UID: 1, User: "daemon"}).Create(core.Request{Device: 1, Memory: human.Fraction(0.2), Duration: 3600e9})
	require.NoError(t, err)

	for _, tc := range []struct {
		frame string
		env   []string
		want  string
	}{
		{fmt.Sprintf(`{"v":1,"op":"wrapper","id":%d,"group":1}`, id), nil, "process group 1 is not led by a command of the caller's"},
		{fmt.Sprintf(`{"v":1,"op":"wrapper","id":%d,"group":%d}`, id, os.Getpid()), nil, "is not led by a command of the caller's"},
		{fmt.Sprintf(`{"v":1,"op":"wrapper","id":%d,"group":$GROUP}`, theirs.ID), []string{withChild}, "belongs to daemon"},
	} {
		r := sendAs(t, k, member, tc.frame, tc.env...)
		require.Equal(t, ReplyError, r.Kind, tc.frame)
		require.Contains(t, r.Error, tc.want, tc.frame)
	}
	for _, id := range []uint64{id, theirs.ID} {
		p, err := k.root.Get(id)
		require.NoError(t, err)
		require.Nil(t, p.Wrapper, "a refusal records nothing")
	}

	r := sendAs(t, k, member, fmt.Sprintf(`{"v":1,"op":"wrapper","id":%d,"group":$GROUP,"pid":1}`, id), withChild)
	require.Equal(t, ReplyDone, r.Kind, r.Error)
	p, err := k.root.Get(id)
	require.NoError(t, err)
	require.NotNil(t, p.Wrapper)
	require.NotEqual(t, os.Getpid(), p.Wrapper.PID, "the sender's process, not the keeper's")
	require.Positive(t, p.Wrapper.Group)
	require.NotEqual(t, p.Wrapper.PID, p.Wrapper.Group, "its command leads a group of its own")
	require.NotZero(t, p.Wrapper.Start)
}

// The signals at a run's deadline are claimed through the keeper, in the
// keeper's words: SIGTERM once for the command's group, which ends the
// booking past its deadline; only SIGTERM and SIGKILL are claimed, and
// only for a command of the caller's.
func TestRunClaimsItsSignalsThroughTheKeeper(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	mine := sendAs(t, k, member, `{"v":1,"op":"create","create":{"device":0,"fraction":0.2,"duration":60000000000}}`)
	require.Equal(t, ReplyDone, mine.Kind, mine.Error)
	id := mine.Partition.ID
	k.clk.Advance(61e9)

	r := sendAs(t, k, member, fmt.Sprintf(`{"v":1,"op":"signal","id":%d,"group":$GROUP,"signal":10}`, id), withChild)
	require.Equal(t, ReplyError, r.Kind)
	require.ErrorIs(t, r.err(), domain.ErrInput)
	r = sendAs(t, k, member, fmt.Sprintf(`{"v":1,"op":"signal","id":%d,"group":1,"signal":15}`, id))
	require.Equal(t, ReplyError, r.Kind)
	require.ErrorIs(t, r.err(), ErrRefused)

	r = sendAs(t, k, member, fmt.Sprintf(`{"v":1,"op":"signal","id":%d,"group":$GROUP,"signal":15}`, id), withChild)
	require.Equal(t, ReplyDone, r.Kind, r.Error)
	require.True(t, r.Claimed)
	p, err := k.root.Get(id)
	require.NoError(t, err)
	require.Equal(t, domain.Expired, p.State, "the claim ends the booking past its deadline")
	events, err := k.root.LastEvents(2)
	require.NoError(t, err)
	var signalled *domain.Event
	for i := range events {
		if events[i].Kind == domain.EventSignalled {
			signalled = &events[i]
		}
	}
	require.NotNil(t, signalled, "%+v", events)
	require.Equal(t, nobodyUID, signalled.UID)
	require.True(t, strings.HasPrefix(signalled.Detail, "SIGTERM to sleep (process group): booking #"), signalled.Detail)
}

// A waiter hands itself to the keeper only for a request of its own, and
// the app hands a request only to a process of its user's: others are
// refused and the request keeps its waiter.
func TestWaitOnlyForOnesOwnRequest(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	_, err := k.root.Create(core.Request{Device: 0, Memory: human.Fraction(1), Duration: 3600e9})
	require.NoError(t, err)
	daemon := k.root.As(t.Context(), domain.Identity{UID: 1, User: "daemon"})
	_, e, err := daemon.Enqueue(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: 3600e9}, admission.WaitOptions{PID: os.Getpid()})
	require.NoError(t, err)
	require.NotNil(t, e)

	r := sendAs(t, k, member, fmt.Sprintf(`{"v":1,"op":"wait","id":%d}`, e.ID))
	require.Equal(t, ReplyError, r.Kind)
	require.ErrorIs(t, r.err(), domain.ErrNotOwner)
	require.Contains(t, r.Error, "belongs to daemon")
	r = sendAs(t, k, member, `{"v":1,"op":"wait","id":99}`)
	require.Equal(t, ReplyError, r.Kind)
	require.ErrorIs(t, r.err(), domain.ErrNoRequest)
	r = sendAs(t, k, member, fmt.Sprintf(`{"v":1,"op":"hand-over","id":%d,"pid":%d}`, e.ID, os.Getpid()))
	require.Equal(t, ReplyError, r.Kind)
	require.ErrorIs(t, r.err(), domain.ErrNotOwner)
	line, err := k.root.LineRequest(e.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Waiting, line.State)
	require.Equal(t, os.Getpid(), line.Waiter.PID, "its waiter is still daemon's")

	// The member's own request goes only to a process of the member's.
	r = sendAs(t, k, member, `{"v":1,"op":"enqueue","create":{"device":0,"fraction":0.5,"duration":3600000000000}}`)
	require.Equal(t, ReplyDone, r.Kind, r.Error)
	r = sendAs(t, k, member, fmt.Sprintf(`{"v":1,"op":"hand-over","id":%d,"pid":%d}`, r.Entry.ID, os.Getpid()))
	require.Equal(t, ReplyError, r.Kind)
	require.Equal(t, fmt.Sprintf("not your booking: process %d is not yours", os.Getpid()), r.Error)
}
