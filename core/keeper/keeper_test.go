package keeper

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// daemonGID is the group of the tests' guarded ledger: the host's daemon
// group, which nobody is not in unless a test gives it.
const daemonGID = 1

var rootID = domain.Identity{UID: 0, User: "root"}

func testDevices() (core.Listing, error) {
	return core.Listing{Backend: "test", Devices: []gpu.Device{
		{Index: 0, UUID: "GPU-0", Name: "Test GPU", MemoryTotal: 80 << 30},
		{Index: 1, UUID: "GPU-1", Name: "Test GPU", MemoryTotal: 80 << 30},
	}}, nil
}

// keeperUnderTest is a keeper serving a ledger of its own, on a fake
// clock, and root's direct client of that ledger.
type keeperUnderTest struct {
	sock string
	clk  *clock.Fake
	root *core.Client
	srv  *Server
}

// startKeeper serves a ledger in a fresh directory that any user may
// enter, as root's monitor does, until the test ends.
func startKeeper(t *testing.T, set ...func(*Server)) *keeperUnderTest {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the keeper is root's")
	}
	dir, err := os.MkdirTemp("", "chronos-keeper-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	clk := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	l := bolt.New(filepath.Join(dir, "chronos.db"))
	// As root keeps a guarded ledger (see bolt.New), which this directory
	// is not; KEEPER_REOPEN=1 opens the file for every write, the baseline
	// of the figures.
	l.KeepOpen = os.Getenv("KEEPER_REOPEN") == ""
	root := core.NewClient(core.Options{Ledger: l, Devices: testDevices, Clock: clk, As: &rootID})
	ln, err := Listen(filepath.Join(dir, "run", "chronos.sock"), daemonGID)
	require.NoError(t, err)
	k := &keeperUnderTest{sock: ln.Path(), clk: clk, root: root, srv: &Server{Client: root, GID: daemonGID, Group: "daemon"}}
	for _, f := range set {
		f(k.srv)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
		require.NoFileExists(t, ln.Path(), "the socket outlived its keeper")
	})
	return k
}

// dial connects to the keeper as this (root) process.
func (k *keeperUnderTest) dial(t *testing.T) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: k.sock, Net: "unix"})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// rawFrame is a frame of any bytes, with the length given.
func rawFrame(length uint32, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, length), body...)
}

// createFrame asks for share of GPU 0 for an hour.
func createFrame(share float64) []byte {
	body, _ := json.Marshal(Request{V: Version, Op: OpCreate, Create: &Create{Device: 0, Fraction: share, Duration: time.Hour}})
	return rawFrame(uint32(len(body)), body)
}

// exchange sends raw bytes (closing the sending side when closeWrite) and
// returns the keeper's final reply, or the error that ended the reading.
func exchange(t *testing.T, conn *net.UnixConn, raw []byte, closeWrite bool) (Reply, error) {
	t.Helper()
	_, err := conn.Write(raw)
	require.NoError(t, err)
	if closeWrite {
		require.NoError(t, conn.CloseWrite())
	}
	var r Reply
	for {
		if err := ReadFrame(conn, &r); err != nil {
			return r, err
		}
		if r.Kind == ReplyDone || r.Kind == ReplyError {
			return r, nil
		}
	}
}

// What is not a request gets an error reply, or for a frame cut short
// the connection closed, and never a crash: the keeper serves the next
// caller as before.
func TestFramesThatAreNotRequests(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	garbage := []byte("\x00\xffnot json at all{")
	for _, tc := range []struct {
		name  string
		raw   []byte
		reply string // "" when the keeper just closes the connection
	}{
		{"garbage", rawFrame(uint32(len(garbage)), garbage), "a frame that is not a request's JSON"},
		{"oversized", rawFrame(MaxFrame+1, nil), "a frame longer than 65536 bytes"},
		{"4 GiB announced", rawFrame(0xffffffff, []byte("x")), "a frame longer than 65536 bytes"},
		{"empty", rawFrame(0, nil), "an empty frame"},
		{"unknown op", []byte(`{"v":1,"op":"format-disk"}`), `unknown request "format-disk"`},
		{"another version", []byte(`{"v":99,"op":"release","id":1}`), "protocol version 99; this keeper speaks 1"},
		{"create without a booking", []byte(`{"v":1,"op":"create"}`), "a create without its booking"},
		{"cut short", rawFrame(100, []byte("{\"v\":1")), "a frame cut short"},
		{"half a length", []byte{0, 0}, "a frame cut short"},
		{"nothing at all", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.raw
			if len(raw) > 0 && raw[0] == '{' {
				raw = rawFrame(uint32(len(raw)), raw)
			}
			r, err := exchange(t, k.dial(t), raw, true)
			if tc.reply == "" {
				require.ErrorIs(t, err, io.EOF, "closed without a word")
				return
			}
			require.NoError(t, err)
			require.Equal(t, ReplyError, r.Kind)
			require.Contains(t, r.Error, tc.reply)
			require.ErrorIs(t, r.err(), ErrRefused)
		})
	}
	r, err := exchange(t, k.dial(t), createFrame(0.25), false)
	require.NoError(t, err)
	require.Equal(t, ReplyDone, r.Kind, r.Error)
	require.Equal(t, int64(250000), r.Partition.SharePPM)
}

// A caller who connects and sends nothing is dropped once the read
// timeout passes on the ledger's clock, and not before.
func TestSilentCallerIsDropped(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	conn := k.dial(t)
	require.True(t, k.clk.WaitTimers(1, 10*time.Second), "the keeper set no read timeout")
	k.clk.Advance(DefaultReadTimeout - time.Second)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(100*time.Millisecond))) // this test's own patience: the kernel's clock
	_, err := conn.Read(make([]byte, 1))
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "dropped before its time: %v", err)

	k.clk.Advance(time.Second)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
}

// A waiter's request leaves the line when its connection closes: the
// caller stopped waiting, or its process died.
func TestWaiterLeavesWithItsConnection(t *testing.T) {
	t.Parallel()
	k := startKeeper(t)
	_, err := k.root.Create(core.Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)

	conn := k.dial(t)
	body, _ := json.Marshal(Request{V: Version, Op: OpCreate, Create: &Create{Device: 0, Fraction: 0.5, Duration: time.Hour, Wait: true}})
	_, err = conn.Write(rawFrame(uint32(len(body)), body))
	require.NoError(t, err)
	var joined Reply
	require.NoError(t, ReadFrame(conn, &joined))
	require.Equal(t, ReplyJoined, joined.Kind)
	require.Equal(t, os.Getpid(), joined.Entry.Waiter.PID, "the waiter is the caller's process, from the kernel")
	line, err := k.root.Queue()
	require.NoError(t, err)
	require.Len(t, line, 1)

	final, err := exchange(t, conn, nil, true)
	require.NoError(t, err)
	require.Equal(t, ReplyError, final.Kind)
	require.ErrorIs(t, final.err(), domain.ErrLeftLine)
	require.Contains(t, final.Error, "stopped waiting (its connection to the keeper closed)")
	r, err := k.root.LineRequest(joined.Entry.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Cancelled, r.State)
}

func TestMain(m *testing.M) {
	if role := os.Getenv("KEEPER_TEST_ROLE"); role != "" {
		os.Exit(playRole(role))
	}
	code := m.Run()
	if publicBin != "" {
		os.RemoveAll(filepath.Dir(publicBin))
	}
	os.Exit(code)
}

// playRole is a process of the test's started as another user: "send"
// sends KEEPER_TEST_FRAME to the socket KEEPER_TEST_SOCKET and prints the
// keeper's final reply as JSON; with KEEPER_TEST_HOLD=N it first holds N
// connections open that send nothing; with KEEPER_TEST_CHILD set it starts
// a command in a process group of its own, whose number replaces $GROUP
// in the frame.
func playRole(role string) int {
	if play, ok := figureRoles[role]; ok {
		return play()
	}
	if role != "send" {
		fmt.Fprintln(os.Stderr, "unknown role", role)
		return 2
	}
	frame := os.Getenv("KEEPER_TEST_FRAME")
	if n, _ := strconv.Atoi(os.Getenv("KEEPER_TEST_HOLD")); n > 0 {
		// Connections of this process's that send nothing, held open.
		for range n {
			c, err := net.Dial("unix", os.Getenv("KEEPER_TEST_SOCKET"))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer c.Close()
		}
	}
	if os.Getenv("KEEPER_TEST_CHILD") != "" {
		// A command of this process's, leading its own group, as chronos
		// run starts one: the frame names its group as $GROUP.
		child := exec.Command("sleep", "60")
		child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
		frame = strings.ReplaceAll(frame, "$GROUP", strconv.Itoa(child.Process.Pid))
	}
	conn, err := net.Dial("unix", os.Getenv("KEEPER_TEST_SOCKET"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer conn.Close()
	body := []byte(frame)
	_, _ = conn.Write(rawFrame(uint32(len(body)), body)) // a refusal comes before the keeper reads
	for {
		var r Reply
		if err := ReadFrame(conn, &r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if r.Kind == ReplyDone || r.Kind == ReplyError {
			_ = json.NewEncoder(os.Stdout).Encode(r)
			return 0
		}
	}
}
