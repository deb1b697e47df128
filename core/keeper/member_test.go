package keeper

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

const nobodyUID = 65534

var (
	// member is nobody in the ledger's group, as a login of a member is.
	member = &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID, Groups: []uint32{daemonGID}}
	// outsider is nobody in no group of the ledger's.
	outsider = &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID, Groups: []uint32{}}
)

var (
	publicOnce sync.Once
	publicBin  string
)

// publicTestBinary is a copy of this test binary that any user may run
// (go test's own sits in a directory of root's alone).
func publicTestBinary(t *testing.T) string {
	t.Helper()
	publicOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chronos-keeper-bin-")
		if err != nil {
			return
		}
		data, err := os.ReadFile(os.Args[0])
		if err != nil {
			return
		}
		bin := filepath.Join(dir, "keeper.test")
		if os.Chmod(dir, 0o755) == nil && os.WriteFile(bin, data, 0o755) == nil {
			publicBin = bin
		}
	})
	require.NotEmpty(t, publicBin, "copy the test binary where other users may run it")
	return publicBin
}

// sendAs sends frame to the keeper from a process of cred's, in the
// environment env (playRole's), and returns the keeper's final reply.
func sendAs(t *testing.T, k *keeperUnderTest, cred *syscall.Credential, frame string, env ...string) Reply {
	t.Helper()
	cmd := exec.Command(publicTestBinary(t), "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "KEEPER_TEST_ROLE=send", "KEEPER_TEST_SOCKET="+k.sock, "KEEPER_TEST_FRAME="+frame), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)
	var r Reply
	require.NoError(t, json.Unmarshal(out, &r), "%s", out)
	return r
}

// Who asks is the kernel's word: a frame that claims to be root's (uid,
// user fields, a caller's forging) books as the member who sent it.
func TestIdentityComesFromTheKernel(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	r := sendAs(t, k, member, `{"v":1,"op":"create","uid":0,"user":"root","UID":0,"as":{"uid":0},"create":{"device":0,"fraction":0.2,"duration":3600000000000,"uid":0}}`)
	require.Equal(t, ReplyDone, r.Kind, r.Error)
	require.Equal(t, nobodyUID, r.Partition.UID)
	require.Equal(t, "nobody", r.Partition.User)

	p, err := k.root.Get(r.Partition.ID)
	require.NoError(t, err)
	require.Equal(t, nobodyUID, p.UID, "recorded in the ledger as nobody's")
	events, err := k.root.LastEvents(1)
	require.NoError(t, err)
	require.Equal(t, domain.EventCreated, events[0].Kind)
	require.Equal(t, nobodyUID, events[0].UID, "the audit trail names the member")

	// Booking for someone else is root's, through the keeper as directly.
	r = sendAs(t, k, member, `{"v":1,"op":"create","create":{"device":1,"fraction":0.2,"duration":3600000000000,"for":"root"}}`)
	require.Equal(t, ReplyError, r.Kind)
	require.ErrorIs(t, r.err(), domain.ErrNotRoot)
}

// A member may not release, extend or hold another user's booking
// through the keeper, and the refusal changes nothing.
func TestMemberCannotTouchAnothersBooking(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	daemon := domain.Identity{UID: 1, User: "daemon"}
	p, err := k.root.As(t.Context(), daemon).Create(core.Request{Device: 0, Memory: human.Fraction(0.3), Duration: 2 * 3600e9})
	require.NoError(t, err)
	id := p.ID
	for _, frame := range []string{
		`{"v":1,"op":"release","id":1}`,
		`{"v":1,"op":"extend","id":1,"duration":600000000000}`,
		`{"v":1,"op":"hold","id":1,"duration":600000000000,"reason":"mine now"}`,
	} {
		r := sendAs(t, k, member, frame)
		require.Equal(t, ReplyError, r.Kind, frame)
		require.ErrorIs(t, r.err(), domain.ErrNotOwner, frame)
		require.Contains(t, r.Error, "belongs to daemon")
	}
	after, err := k.root.Get(id)
	require.NoError(t, err)
	require.Equal(t, domain.Live, after.State)
	require.Equal(t, p.Expires, after.Expires)
}

// A process in none of the ledger's groups is refused by the keeper
// itself, even where the socket's mode would let it connect.
func TestOutsiderIsRefused(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	require.NoError(t, os.Chmod(k.sock, 0o666)) // a mistake of root's: the keeper still checks
	r := sendAs(t, k, outsider, `{"v":1,"op":"create","create":{"device":0,"fraction":0.2,"duration":3600000000000}}`)
	require.Equal(t, ReplyError, r.Kind)
	require.ErrorIs(t, r.err(), ErrRefused)
	require.Equal(t, "the keeper refused the request: nobody (uid 65534) is not in the group daemon: ask root to add you (sudo usermod -aG daemon nobody), then log in again", r.Error)
	parts, err := k.root.List(true)
	require.NoError(t, err)
	require.Empty(t, parts)
}

// The app joins the line through the keeper and returns at once: the
// request is the member's, its waiter the member's process, which root's
// keeper watches (the kernel named it).
func TestEnqueueNamesTheCallersProcess(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	_, err := k.root.Create(core.Request{Device: 0, Memory: human.Fraction(1), Duration: 3600e9})
	require.NoError(t, err)
	r := sendAs(t, k, member, `{"v":1,"op":"enqueue","create":{"device":0,"fraction":0.5,"duration":3600000000000}}`)
	require.Equal(t, ReplyDone, r.Kind, r.Error)
	require.Nil(t, r.Partition)
	require.NotNil(t, r.Entry)
	require.Equal(t, nobodyUID, r.Entry.UID)
	require.Positive(t, r.Entry.Waiter.PID)
	require.NotEqual(t, os.Getpid(), r.Entry.Waiter.PID, "the sender's process, not the keeper's")
	line, err := k.root.LineRequest(r.Entry.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Waiting, line.State)
	require.Equal(t, r.Entry.Waiter.PID, line.Waiter.PID)
}

// A refusal of what would fit later crosses the socket as what it is, so
// the app offers to wait in line through the keeper as it does directly.
func TestFitsLaterCrossesTheSocket(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	held, err := k.root.Create(core.Request{Device: 0, Memory: human.Fraction(1), Duration: 3600e9})
	require.NoError(t, err)
	_, err = NewClient(k.sock, k.root).Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: 3600e9})
	var later *admission.FitsLaterError
	require.ErrorAs(t, err, &later)
	require.True(t, later.At.Equal(held.Expires), "it fits when the holder's booking ends: %v", later.At)
	require.ErrorIs(t, err, domain.ErrOverbooked)
	require.NotContains(t, later.Why.Error(), "It would fit at", "Why is the refusal alone")
	require.Contains(t, err.Error(), "It would fit at")
}

// A member dismisses the notices of a booking of theirs through the
// keeper (their app's key), for every app of theirs; another member may
// not dismiss them.
func TestMemberDismissesNoticesThroughTheKeeper(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	r := sendAs(t, k, member, `{"v":1,"op":"create","create":{"device":0,"fraction":0.2,"duration":720000000000}}`)
	require.Equal(t, ReplyDone, r.Kind, r.Error)
	id := r.Partition.ID
	events, err := k.root.LastEvents(1)
	require.NoError(t, err)
	seq := events[0].Seq

	daemon := &syscall.Credential{Uid: 1, Gid: daemonGID}
	other := sendAs(t, k, daemon, fmt.Sprintf(`{"v":1,"op":"dismiss","id":%d,"seq":%d}`, id, seq))
	require.Equal(t, ReplyError, other.Kind)
	require.ErrorIs(t, other.err(), domain.ErrNotOwner)
	p, err := k.root.Get(id)
	require.NoError(t, err)
	require.Zero(t, p.NoticesDismissed)

	mine := sendAs(t, k, member, fmt.Sprintf(`{"v":1,"op":"dismiss","id":%d,"seq":%d}`, id, seq))
	require.Equal(t, ReplyDone, mine.Kind, mine.Error)
	p, err = k.root.Get(id)
	require.NoError(t, err)
	require.Equal(t, seq, p.NoticesDismissed, "recorded in the ledger by the keeper, as nobody's")
}
