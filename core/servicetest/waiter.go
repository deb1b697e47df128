package servicetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// PlayWaiter is a waiting process, the role "wait" of a test binary: it
// asks for arg — a share of GPU 0, or "GPU SHARE" (gpu3:0 0.5) — for an
// hour, says "queued ID" when it joins the line, waits, and says "booked
// ID" when it is booked. SIGINT or SIGTERM makes it leave. (It catches
// them as the command layer does; a role process is a whole program.)
func PlayWaiter(c *core.Client, arg string) int {
	gpuName, shareText, ok := strings.Cut(arg, " ")
	if !ok {
		gpuName, shareText = "0", arg
	}
	host, dev, err := human.ParseGPU(gpuName)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return coretest.RoleFailed
	}
	share, _ := strconv.ParseFloat(shareText, 64)
	p, entry, err := c.Enqueue(core.Request{Host: host, Device: dev, Memory: human.Fraction(share), Duration: time.Hour}, admission.WaitOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return coretest.RoleFailed
	}
	if p == nil {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		fmt.Printf("queued %d\n", entry.ID)
		if p, err = c.Wait(ctx, entry.ID, nil); errors.Is(err, domain.ErrLeftLine) {
			fmt.Fprintln(os.Stderr, err)
			return coretest.RoleLeft
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return coretest.RoleFailed
		}
	}
	fmt.Printf("booked %d\n", p.ID)
	return coretest.RoleOK
}

// Waiter is a waiting process started by a test.
type Waiter struct {
	Cmd     *exec.Cmd
	lines   *bufio.Scanner
	Request uint64 // the ID of its request
	UID     int
}

// StartWaiter starts bin (a test binary whose TestMain plays the role
// "wait" with PlayWaiter) on the ledger db as uid (0: root), and returns
// once the waiter has joined the line.
func StartWaiter(t *testing.T, bin, db string, uid int, share string) *Waiter {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = coretest.RoleEnv("CHRONOS_TEST_ROLE=wait", "CHRONOS_TEST_DB="+db, "CHRONOS_TEST_ARG="+share)
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	w := &Waiter{Cmd: cmd, lines: bufio.NewScanner(out), UID: uid}
	require.True(t, w.lines.Scan(), "the waiter said nothing")
	_, err = fmt.Sscanf(w.lines.Text(), "queued %d", &w.Request)
	require.NoError(t, err, "the waiter said %q", w.lines.Text())
	return w
}

// Booked waits for the waiter to say it is booked and to exit, and is the
// booking's ID.
func (w *Waiter) Booked(t *testing.T) uint64 {
	t.Helper()
	require.True(t, w.lines.Scan(), "the waiter exited unbooked")
	var id uint64
	_, err := fmt.Sscanf(w.lines.Text(), "booked %d", &id)
	require.NoError(t, err)
	require.NoError(t, w.Cmd.Wait())
	return id
}

// RequestIn is the waiter's request as c's ledger has it now.
func (w *Waiter) RequestIn(t *testing.T, c *core.Client) domain.Request {
	t.Helper()
	r, err := c.Request(w.Request)
	require.NoError(t, err)
	return r
}

// PlayBook is the "book" role: a writer racing others books 10% of the
// GPU arg names (0 unless told) for an hour; RoleOverbooked when there
// was no room.
func PlayBook(c *core.Client, arg string) int {
	dev, _ := strconv.Atoi(arg)
	_, err := c.Create(core.Request{Device: dev, Memory: human.Fraction(0.1), Duration: time.Hour})
	if errors.Is(err, domain.ErrOverbooked) {
		return coretest.RoleOverbooked
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return coretest.RoleFailed
	}
	return 0
}

// Main is TestMain for a package whose tests start the test binary again
// to play a role (CHRONOS_TEST_ROLE, see coretest.RoleCmd), so that the
// processes that race are real OS processes: it plays the role through
// play, on the ledger CHRONOS_TEST_DB names and with CHRONOS_TEST_ARG, and
// exits with play's status; else it runs the tests and stops the shared
// etcd server.
func Main(m *testing.M, play func(role, db, arg string) int) {
	if role := os.Getenv("CHRONOS_TEST_ROLE"); role != "" {
		os.Exit(play(role, os.Getenv("CHRONOS_TEST_DB"), os.Getenv("CHRONOS_TEST_ARG")))
	}
	etcdtest.Main(m)
}
