package monitor

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/ledger"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// A pass that began before a booking's deadline and still waits on a busy
// ledger when it comes (here, to write the booking's warning while another
// process holds the file) does not put the end off: the booking's process
// gets SIGTERM at the deadline, from the pass's watch, while the pass still
// waits; the next pass records the signal and the expiry and sends
// nothing again.
func TestSIGTERMAtTheDeadlineWhileAnEarlierPassWaits(t *testing.T) {
	t.Parallel()
	w := watchedJob(t)
	db, clk, c, p, proc, m := w.db, w.clk, w.c, w.p, w.proc, w.m
	_, err := m.Tick() // a snapshot and a sample to plan from
	require.NoError(t, err)

	// Two seconds before the end the warning is due: the pass writes,
	// and its write waits for the file another process holds.
	holder, marker := coretest.HoldLedger(t, db)
	clk.Set(p.Expires.Add(-2 * time.Second))
	timers := clk.Timers()
	ticked := make(chan error, 1)
	go func() { _, err := m.tick(false); ticked <- err }()
	require.True(t, clk.WaitTimers(timers+1, 10*time.Second), "the pass arms the coming deadline")
	clk.Set(p.Expires)
	requireTermWhileThePassWaits(t, proc, ticked)
	freeLedger(t, holder, marker, ticked)
	clk.Advance(time.Second)
	_, err = m.Tick()
	require.NoError(t, err)
	got, err := c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Expired, got.State)
	evs, err := c.FindEvents(core.EventFilter{Booking: p.ID, Kinds: []domain.EventKind{domain.EventSignalled}}, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1, "recorded once, sent once")
	require.Contains(t, evs[0].Detail, "SIGTERM")
	require.Contains(t, evs[0].Detail, watchNote)

	clk.Advance(time.Second)
	_, err = m.Tick()
	require.NoError(t, err)
	evs, err = c.FindEvents(core.EventFilter{Booking: p.ID, Kinds: []domain.EventKind{domain.EventSignalled}}, 0)
	require.NoError(t, err)
	require.Len(t, evs, 1, "nothing signalled twice")
}

// The watch plans from the last read; a booking extended since keeps its
// job: at the old deadline the ledger answers, and nothing is sent.
func TestWatchLeavesABookingExtendedSinceTheLastRead(t *testing.T) {
	t.Parallel()
	j := watchedJob(t)
	c, p, proc, m, log := j.c, j.p, j.proc, j.m, &j.log
	_, err := m.Tick()
	require.NoError(t, err)
	_, err = c.Extend(p.ID, time.Hour)
	require.NoError(t, err)
	j.watchTheOldDeadline(t) // planned from the read before the extension
	require.NoError(t, proc.Process.Signal(syscall.Signal(0)), "the job runs on")
	require.NotContains(t, log.kinds(), string(domain.EventSignalled))
}

// A `chronos run` that takes the booking after the last read signals its
// command itself, claiming the signal: root's watch, planned before, sends
// nothing at the deadline, so the command gets one SIGTERM, not two.
func TestWatchLeavesABookingAChronosRunTookSinceTheLastRead(t *testing.T) {
	t.Parallel()
	j := watchedJob(t)
	c, p, proc, m, log := j.c, j.p, j.proc, j.m, &j.log
	_, err := m.Tick()
	require.NoError(t, err)
	require.NoError(t, c.RecordWrapper(p.ID, proc.Process.Pid))
	j.watchTheOldDeadline(t) // planned from the read before the wrapper
	require.NoError(t, proc.Process.Signal(syscall.Signal(0)), "left to the wrapper")
	require.NotContains(t, log.kinds(), string(domain.EventSignalled))
}

// watched is a booking of 10 s on a ledger file with a real process in it
// (on a simulated GPU), and a monitor of root's watching it, on a fake
// clock.
type watched struct {
	db   string
	clk  *clock.Fake
	c    *core.Client
	p    *core.Partition
	proc *exec.Cmd
	m    *Monitor
	log  actLog
}

func watchedJob(t *testing.T) *watched {
	t.Helper()
	w := &watched{db: filepath.Join(t.TempDir(), "chronos.db"), clk: coretest.NewFakeClock()}
	sim := gpu.NewSim(gpu.SimOptions{})
	w.c = servicetest.SimClient(&bolt.Ledger{Path: w.db, Timeout: time.Minute}, sim, proc.CurrentIdentity(), w.clk)
	var err error
	w.p, err = w.c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.5), Duration: 10 * time.Second})
	require.NoError(t, err)
	w.proc = startChild(t, w.p.ID, "sleep 60")
	sim.Attach(coretest.IdleGPU, w.proc.Process.Pid, 1<<30)
	w.m = New(w.c, Options{Backend: sim, OnAct: w.log.add})
	return w
}

// watchTheOldDeadline arms the watch from the monitor's last read, sets
// the clock to the booking's deadline as read then, and waits until the
// watch has made its check there (and sent what it still found due).
func (j *watched) watchTheOldDeadline(t *testing.T) {
	t.Helper()
	timers := j.clk.Timers()
	j.m.watch = j.m.watchDeadlines(j.clk.Now())
	w := j.m.watch
	require.True(t, j.clk.WaitTimers(timers+1, 10*time.Second))
	j.clk.Set(j.p.Expires)
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not act at the deadline")
	}
	j.m.settleWatch()
}

// A pass after deadlines records what the watch sent (an event and a claim
// each) besides the expiries it has to write and the minutes it accounts:
// all of it within one transaction's budget, however much is due, since
// etcd refuses a transaction of more than 128 writes and a pass refused
// every time would record nothing while the backlog grows.
func TestPassBudgetKeepsRoomForWhatTheWatchSent(t *testing.T) {
	due := make([]uint64, 100)
	p := pass{due: due, warn: due, offline: 2 * offlineBatch}
	acct := p.bound()
	writes := len(p.due)*(3+ledger.ChargeWrites) + 2*len(p.warn) + p.offline + acct + storage.DropMax + 1
	require.LessOrEqual(t, writes, storage.WriteBudget)
	require.NotEmpty(t, p.due, "expiries still go first")
}

// requireTermWhileThePassWaits requires that proc gets SIGTERM while the
// pass (ticked) still waits on the ledger: the signal did not wait for it.
func requireTermWhileThePassWaits(t *testing.T, proc *exec.Cmd, ticked <-chan error) {
	t.Helper()
	ws := coretest.WaitStatus(t, proc, 10*time.Second)
	require.True(t, ws.Signaled())
	require.Equal(t, syscall.SIGTERM, ws.Signal())
	select {
	case err := <-ticked:
		t.Fatalf("the pass ended (%v) before the ledger was free: the signal did not wait for it", err)
	default:
	}
}

// freeLedger lets the process holding the ledger go, and requires the
// waiting pass (ticked) to end without error.
func freeLedger(t *testing.T, holder *exec.Cmd, marker string, ticked <-chan error) {
	t.Helper()
	require.NoError(t, os.WriteFile(marker+".go", nil, 0o600))
	require.NoError(t, holder.Wait())
	require.NoError(t, <-ticked)
}

// Root's early SIGTERM at a deadline leaves a process whose environment
// names a live chronos run: that run signals its command itself, claiming
// the signal, and the monitor's read may not show it yet (CI found the
// command signalled twice). Once that run is gone, root goes first again.
func TestEarlySIGTERMIsLeftToALiveChronosRun(t *testing.T) {
	t.Parallel()
	m := &Monitor{root: true}
	p := signalPlan{cause: domain.EventExpired, sig: syscall.SIGTERM}
	require.True(t, m.goesFirst(p, true))
	p.proc.RunPID = os.Getpid()
	require.False(t, m.goesFirst(p, true), "its chronos run lives")
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	p.proc.RunPID = gone.Process.Pid
	require.True(t, m.goesFirst(p, true), "its chronos run is gone")
}
