package core

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// playWaiter is a waiting process: it asks for arg — a share of GPU 0, or
// "GPU SHARE" (gpu3:0 0.5) — for an hour, says "queued ID" when it joins
// the line, waits, and says "booked ID" when it is booked. SIGINT or
// SIGTERM makes it leave.
func playWaiter(c *Client, arg string) int {
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
	p, entry, err := c.Enqueue(Request{Host: host, Device: dev, Memory: human.Fraction(share), Duration: time.Hour}, admission.WaitOptions{})
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

// waiterProc is a waiting process started by a test.
type waiterProc struct {
	cmd     *exec.Cmd
	lines   *bufio.Scanner
	request uint64
	uid     int
}

// startWaiter starts a waiter process as uid (0: root) and returns once it
// has joined the line.
func startWaiter(t *testing.T, bin, db string, uid int, share string) *waiterProc {
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
	w := &waiterProc{cmd: cmd, lines: bufio.NewScanner(out), uid: uid}
	require.True(t, w.lines.Scan(), "the waiter said nothing")
	_, err = fmt.Sscanf(w.lines.Text(), "queued %d", &w.request)
	require.NoError(t, err, "the waiter said %q", w.lines.Text())
	return w
}

// booked waits for the waiter to say it is booked and to exit.
func (w *waiterProc) booked(t *testing.T) uint64 {
	t.Helper()
	require.True(t, w.lines.Scan(), "the waiter exited unbooked")
	var id uint64
	_, err := fmt.Sscanf(w.lines.Text(), "booked %d", &id)
	require.NoError(t, err)
	require.NoError(t, w.cmd.Wait())
	return id
}

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

// uidOf looks a system user up; the test skips without it.
func uidOf(t *testing.T, name string) int {
	t.Helper()
	id, err := LookupUser(name)
	if err != nil || id.UID == 0 {
		t.Skipf("no %s user here", name)
	}
	return id.UID
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
	nobody, daemon := uidOf(t, "nobody"), uidOf(t, "daemon")
	s := open()
	db := s.String()
	r := clientOn(s, nil, coretest.Root)
	var holders []uint64
	for range waitingHolders {
		p, err := r.Create(Request{Device: 0, Memory: human.Fraction(1.0 / waitingHolders), Duration: time.Hour})
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
	var waiters []*waiterProc
	for i := range waitingProcesses {
		waiters = append(waiters, startWaiter(t, bin, db, users[i%3], fmt.Sprint(1.0/waitingHolders)))
	}
	want := slices.Clone(waiters)
	slices.SortStableFunc(want, func(a, b *waiterProc) int { return rank[a.uid] - rank[b.uid] })

	line, err := r.Queue()
	require.NoError(t, err)
	require.Len(t, line, waitingProcesses)
	for i, e := range line {
		require.Equal(t, want[i].request, e.ID, "position %d", i+1)
	}

	// End one booking at a time; each end grants exactly the next in line.
	for i, w := range want {
		var end uint64
		if i < len(holders) {
			end = holders[i]
		} else {
			end = want[i-len(holders)].grantedAs(t, r)
		}
		_, err := r.Release(end)
		require.NoError(t, err)
		got := w.booked(t)
		p, err := r.Get(got)
		require.NoError(t, err)
		require.Equal(t, w.uid, p.UID, "waiter %d (request %d) got a booking of uid %d", i, w.request, p.UID)
		req := w.requestIn(t, r)
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

func (w *waiterProc) requestIn(t *testing.T, c *Client) domain.Request {
	t.Helper()
	var r domain.Request
	require.NoError(t, c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		var err error
		r, err = tx.Request(w.request)
		return err
	}))
	return r
}

func (w *waiterProc) grantedAs(t *testing.T, c *Client) uint64 {
	t.Helper()
	return w.requestIn(t, c).Partition
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
	nobody := uidOf(t, "nobody")
	s := open()
	db := s.String()
	r := clientOn(s, nil, coretest.Root)
	hold, err := r.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	coretest.LetAllWrite(t, s)
	w := startWaiter(t, bin, db, nobody, "0.5")
	next := startWaiter(t, bin, db, 0, "0.5")

	require.NoError(t, w.cmd.Process.Kill())
	_ = w.cmd.Wait()
	_, err = r.TendLine()
	require.NoError(t, err)
	req := w.requestIn(t, r)
	require.Equal(t, domain.Cancelled, req.State)
	require.Contains(t, req.Reason, fmt.Sprintf("its waiting process (pid %d on", w.cmd.Process.Pid))
	line, err := r.Queue()
	require.NoError(t, err)
	require.Len(t, line, 1)
	require.Equal(t, next.request, line[0].ID)

	// The room goes to the living waiter.
	_, err = r.Release(hold.ID)
	require.NoError(t, err)
	p, err := r.Get(next.booked(t))
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
	require.Contains(t, left[0].Detail, fmt.Sprintf("request %d", w.request))
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
	r := clientOn(s, nil, coretest.Root)
	_, err := r.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		w := startWaiter(t, os.Args[0], db, 0, "0.5")
		require.NoError(t, w.cmd.Process.Signal(sig))
		require.Equal(t, coretest.RoleLeft, coretest.ExitCode(w.cmd.Wait()), "%s", sig)
		req := w.requestIn(t, r)
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
	c := clientAt(db, nil, coretest.Alice)
	_, err := c.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)

	holder, marker := coretest.HoldLedger(t, db)

	quick := NewClient(Options{Ledger: &bolt.Ledger{Path: db, Timeout: 500 * time.Millisecond}, Devices: testDevices, As: &coretest.Bob})
	joined := make(chan error, 1)
	go func() {
		_, e, err := quick.Enqueue(Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour}, admission.WaitOptions{})
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
