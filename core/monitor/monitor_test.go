package monitor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

type actLog struct {
	mu   sync.Mutex
	acts []Act
}

func (l *actLog) add(a Act) { l.mu.Lock(); l.acts = append(l.acts, a); l.mu.Unlock() }

func (l *actLog) kinds() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, a := range l.acts {
		out = append(out, string(a.Kind))
	}
	return out
}

func TestMonitorExpiresAndWarnsOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testMonitorExpiresAndWarnsOnce)
}

func testMonitorExpiresAndWarnsOnce(t *testing.T, open storetest.Opener) {
	clock := coretest.NewFakeClock()
	c := servicetest.ClientOn(open(), clock, coretest.Alice)
	p, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	var log actLog
	m := New(c, Options{OnAct: log.add})
	other := New(c, Options{})

	next, err := m.Tick()
	require.NoError(t, err)
	require.Empty(t, log.kinds())
	require.Equal(t, clock.Now().Add(time.Second), next, "nothing due: wake within a second to notice clock steps")

	clock.Advance(55*time.Minute + time.Second) // inside the 5-minute lead
	_, err = m.Tick()
	require.NoError(t, err)
	_, err = other.Tick()
	require.NoError(t, err)
	require.Equal(t, []string{"warned"}, log.kinds())

	clock.Advance(5 * time.Minute)
	_, err = other.Tick()
	require.NoError(t, err)
	_, err = m.Tick()
	require.NoError(t, err)
	require.Equal(t, []string{"warned"}, log.kinds(), "the other monitor flipped it, so this one reports nothing")
	got, err := c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Expired, got.State)
	require.Equal(t, p.Expires, got.Ended)
	require.Equal(t, []string{"created", "warned", "expired"}, servicetest.EventKinds(t, c, p.ID))
}

func TestMonitorWakesAtTheDeadline(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testMonitorWakesAtTheDeadline)
}

func testMonitorWakesAtTheDeadline(t *testing.T, open storetest.Opener) {
	clock := coretest.NewFakeClock()
	c := servicetest.ClientOn(open(), clock, coretest.Alice)
	p, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: 2 * time.Second})
	require.NoError(t, err)
	m := New(c, Options{Policy: &domain.Policy{Expiry: policy.ActTerminate, WarnLead: 0, Grace: time.Second}})
	clock.Advance(1500 * time.Millisecond)
	next, err := m.Tick()
	require.NoError(t, err)
	require.Equal(t, p.Expires, next)
}

// startChild starts a real process that names partition id in its
// environment, as `chronos run` would; script runs under sh.
func startChild(t *testing.T, partition uint64, script string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(append(os.Environ(), procfs.PartitionEnv+"="+strconv.FormatUint(partition, 10)), env...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Wait until exec has filled in the environment /proc shows.
	require.Eventually(t, func() bool {
		info, err := procfs.ReadProc(cmd.Process.Pid)
		return err == nil && info.PartitionID != ""
	}, 2*time.Second, 5*time.Millisecond)
	return cmd
}

// At expiry a booking's process gets SIGTERM; one that ignores it gets
// SIGKILL after the grace period.
func TestMonitorTerminatesThenKills(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testMonitorTerminatesThenKills)
}

func testMonitorTerminatesThenKills(t *testing.T, open storetest.Opener) {
	sim := gpu.NewSim(gpu.SimOptions{})
	c := servicetest.SimClient(open(), sim, proc.CurrentIdentity(), nil)
	p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.5), Duration: time.Second})
	require.NoError(t, err)
	polite := startChild(t, p.ID, "sleep 60")
	stubborn := startChild(t, p.ID, `trap "" TERM; while :; do sleep 0.05; done`)
	sim.Attach(coretest.IdleGPU, polite.Process.Pid, 1<<30)
	sim.Attach(coretest.IdleGPU, stubborn.Process.Pid, 1<<30)

	var log actLog
	pol := policy.Default()
	pol.Grace = 300 * time.Millisecond
	m := New(c, Options{Backend: sim, Policy: &pol, OnAct: log.add, SampleEvery: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)

	ws := coretest.WaitStatus(t, polite, 3*time.Second)
	require.True(t, ws.Signaled())
	require.Equal(t, syscall.SIGTERM, ws.Signal())
	ws = coretest.WaitStatus(t, stubborn, 3*time.Second)
	require.True(t, ws.Signaled())
	require.Equal(t, syscall.SIGKILL, ws.Signal())

	require.Eventually(t, func() bool {
		return strings.Count(strings.Join(servicetest.EventKinds(t, c, p.ID), " "), "signalled") == 3
	}, 2*time.Second, 20*time.Millisecond)
	// The warning is due half a second in; a monitor that a loaded machine
	// starts later than that goes straight to the expiry, as it should.
	kinds := slices.DeleteFunc(servicetest.EventKinds(t, c, p.ID), func(k string) bool { return k == "warned" })
	require.Equal(t, []string{"created", "expired", "signalled", "signalled", "signalled"}, kinds)
}

// A process using more memory than its booking holds is ended when the
// policy says terminate, and only noted when it says warn.
func TestMonitorOverBudgetAndUnbooked(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testMonitorOverBudgetAndUnbooked)
}

func testMonitorOverBudgetAndUnbooked(t *testing.T, open storetest.Opener) {
	sim := gpu.NewSim(gpu.SimOptions{})
	s := open()
	me := proc.CurrentIdentity()
	c := servicetest.SimClient(s, sim, me, nil)
	p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Bytes(2 << 30), Duration: time.Hour})
	require.NoError(t, err)
	hog := startChild(t, p.ID, "sleep 60")
	sim.Attach(coretest.IdleGPU, hog.Process.Pid, 3<<30)

	var log actLog
	warnOnly := domain.Policy{Expiry: policy.ActTerminate, OverBudget: policy.ActWarn, Unbooked: policy.ActWarn, Grace: time.Second, MaxLength: time.Hour}
	m := New(c, Options{Backend: sim, Policy: &warnOnly, OnAct: log.add})
	for range 3 {
		m.nextSample = time.Time{}
		_, err := m.Tick()
		require.NoError(t, err)
	}
	require.Equal(t, []string{"overbudget"}, log.kinds(), "warned once, not once per sample")
	// Once noted, a pass writes nothing: an idle monitor must not wake every
	// other watcher of the ledger each second.
	before := storetest.Fingerprint(t, s)
	m.nextSample = time.Time{}
	_, err = m.Tick()
	require.NoError(t, err)
	require.Equal(t, before, storetest.Fingerprint(t, s))

	// A process that `chronos run` started with the booking's MPS memory
	// limit, under a daemon the booking can trust, is MPS's to hold to its
	// memory; any other process of the booking is still ours to stop.
	terminate := warnOnly
	terminate.OverBudget = policy.ActTerminate
	pipeDir := t.TempDir()
	limited := startChild(t, p.ID, "sleep 60", append(gpu.VisibleEnv(p.DeviceUUID, p.Device),
		"CUDA_MPS_PIPE_DIRECTORY="+pipeDir, fmt.Sprintf("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%dM", p.Bytes>>20))...)
	sim.Attach(coretest.IdleGPU, limited.Process.Pid, 3<<30)
	mps := procfs.MPS{Running: true, Owner: me.UID, PipeDir: pipeDir}
	strict := New(c, Options{Backend: sim, Policy: &terminate, MPS: func(string) procfs.MPS { return mps }, OnAct: log.add})
	_, err = strict.Tick()
	require.NoError(t, err)
	ws := coretest.WaitStatus(t, hog, 2*time.Second)
	require.Equal(t, syscall.SIGTERM, ws.Signal())
	require.True(t, coretest.Alive(limited))

	// Under a daemon of someone else's, the limit holds nothing.
	mps.Owner = me.UID + 1
	_, err = New(c, Options{Backend: sim, Policy: &terminate, MPS: func(string) procfs.MPS { return mps }}).Tick()
	require.NoError(t, err)
	ws = coretest.WaitStatus(t, limited, 2*time.Second)
	require.Equal(t, syscall.SIGTERM, ws.Signal())
}

// Monitors in separate processes, 200 bookings expiring within a second:
// each expiry is recorded exactly once.
func TestManyMonitorsExpireEachOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testManyMonitorsExpireEachOnce)
}

func testManyMonitorsExpireEachOnce(t *testing.T, open storetest.Opener) {
	s := open()
	db := s.String()
	clk := coretest.NewFakeClock()
	c := servicetest.ClientOn(s, clk, coretest.Alice)
	const n = 200
	ids := map[uint64]bool{}
	var first, last time.Time
	for i := range n {
		p, err := c.Create(core.Request{Device: i % 2, Memory: human.Fraction(0.004), Duration: time.Second + time.Duration(i)*5*time.Millisecond})
		require.NoError(t, err)
		ids[p.ID] = true
		if i == 0 {
			first = p.Expires
		}
		last = p.Expires
	}
	// The monitors pass, all at once, at the same instants of the second
	// the deadlines fall in: they race for the same expiries, as monitors
	// on one clock do, without waiting that second.
	var passes []string
	for at := first; !at.After(last); at = at.Add(100 * time.Millisecond) {
		passes = append(passes, at.Format(time.RFC3339Nano))
	}
	passes = append(passes, last.Format(time.RFC3339Nano))
	start := time.Now()
	var monitors []*exec.Cmd
	for range 3 {
		cmd := coretest.RoleCmd(t, "monitor", db, strings.Join(passes, ","))
		require.NoError(t, cmd.Start())
		monitors = append(monitors, cmd)
	}
	for _, m := range monitors {
		require.NoError(t, m.Wait())
	}
	// Their passes wait no real second: about 15 s under -race on a quiet
	// VM of 2 cores, 35 s at load 16; a monitor waiting out the deadlines
	// would take minutes.
	require.Less(t, time.Since(start), 60*time.Second)
	evs, err := c.Events(0, 0)
	require.NoError(t, err)
	expired := map[uint64]int{}
	for _, e := range evs {
		if e.Kind == "expired" {
			expired[e.Partition]++
		}
	}
	require.Len(t, expired, n)
	for id := range ids {
		require.Equal(t, 1, expired[id], "booking %d", id)
	}
}

// An ordinary user's monitor cannot signal root's process: it records that
// and leaves the act to a monitor running as root, which does it once.
func TestUnprivilegedMonitorLeavesActToRoot(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testUnprivilegedMonitorLeavesActToRoot)
}

func testUnprivilegedMonitorLeavesActToRoot(t *testing.T, open storetest.Opener) {
	dir, bin := coretest.OtherUserDir(t)

	s := open()
	if _, ok := s.(*bolt.Ledger); ok {
		s = bolt.New(filepath.Join(dir, "chronos.db")) // a file the other uid may write
	}
	db := s.String()
	sim := gpu.NewSim(gpu.SimOptions{})
	// Both monitors pass at instants the test picks, not when a loaded
	// machine gets round to them: the warning lead of a 1 s booking is a
	// tenth of it, a window a real-time monitor may miss.
	clk := clock.NewFake(clock.System().Now())
	c := servicetest.SimClient(s, sim, coretest.Root, clk)
	p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.1), Duration: time.Second})
	require.NoError(t, err)
	if _, ok := s.(*bolt.Ledger); ok {
		require.NoError(t, os.Chmod(db, 0o666))
	}
	victim := startChild(t, p.ID, "sleep 60")

	// The unprivileged monitor passes once within the warning lead, once
	// past the deadline: it warns, expires the booking and tries to signal.
	passes := p.Expires.Add(-10*time.Millisecond).Format(time.RFC3339Nano) + "," + p.Expires.Format(time.RFC3339Nano)
	mon := exec.Command(bin, "-test.run=^$")
	mon.Env = coretest.RoleEnv("CHRONOS_TEST_ROLE=monitor", "CHRONOS_TEST_DB="+db, "CHRONOS_TEST_ARG="+passes,
		"CHRONOS_TEST_ATTACH="+strconv.Itoa(victim.Process.Pid))
	mon.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	mon.Stderr = os.Stderr
	require.NoError(t, mon.Run())
	require.Nil(t, victim.ProcessState)
	require.Equal(t, []string{"created", "warned", "expired", "denied"}, servicetest.EventKinds(t, c, p.ID))

	sim.Attach(coretest.IdleGPU, victim.Process.Pid, 1<<30)
	clk.Set(p.Expires)
	rootMon := New(c, Options{Backend: sim})
	_, err = rootMon.Tick()
	require.NoError(t, err)
	ws := coretest.WaitStatus(t, victim, 2*time.Second)
	require.Equal(t, syscall.SIGTERM, ws.Signal())
	_, err = rootMon.Tick()
	require.NoError(t, err)
	require.Equal(t, []string{"created", "warned", "expired", "denied", "signalled"}, servicetest.EventKinds(t, c, p.ID))
}

// Deadlines are wall-clock instants: a step of the clock backwards (NTP)
// doesn't end a booking early, a step forwards past the deadline ends it at
// the next pass, and no wait is ever longer than a second.
func TestMonitorFollowsClockSteps(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testMonitorFollowsClockSteps)
}

func testMonitorFollowsClockSteps(t *testing.T, open storetest.Opener) {
	clock := coretest.NewFakeClock()
	c := servicetest.ClientOn(open(), clock, coretest.Alice)
	p, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	m := New(c, Options{Policy: &domain.Policy{Expiry: policy.ActTerminate, MaxLength: 24 * time.Hour}})

	clock.Set(clock.Now().Add(-30 * time.Minute)) // a step back
	next, err := m.Tick()
	require.NoError(t, err)
	require.Equal(t, clock.Now().Add(time.Second), next)
	got, err := c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State)

	clock.Advance(3 * time.Hour) // a big step forwards, past the deadline
	_, err = m.Tick()
	require.NoError(t, err)
	got, err = c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Expired, got.State)
	require.Equal(t, p.Expires, got.Ended, "it ended at its deadline, whenever the monitor noticed")
}

// Many bookings ending at once are all expired, each once, in passes small
// enough for any engine: etcd refuses a transaction of more than 128 writes
// by default.
func TestMonitorExpiresManyAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testMonitorExpiresManyAtOnce)
}

func testMonitorExpiresManyAtOnce(t *testing.T, open storetest.Opener) {
	clock := coretest.NewFakeClock()
	c := servicetest.ClientOn(open(), clock, coretest.Alice)
	const n = 150
	for i := range n {
		_, err := c.Create(core.Request{Device: i % 2, Memory: human.Fraction(0.005), Duration: time.Hour})
		require.NoError(t, err)
	}
	clock.Advance(2 * time.Hour)
	var log actLog
	m := New(c, Options{OnAct: log.add})
	// An expiry writes its booking, live index entry and event, and charges
	// its owner (usage, the interval held, old intervals let go of): eleven
	// fit in a pass.
	for pass := 0; len(log.kinds()) < n; pass++ {
		require.Less(t, pass, 15, "expired %d of %d", len(log.kinds()), n)
		_, err := m.Tick()
		require.NoError(t, err)
	}
	evs, err := c.Events(0, 0)
	require.NoError(t, err)
	expired := map[uint64]int{}
	for _, e := range evs {
		if e.Kind == domain.EventExpired {
			expired[e.Partition]++
		}
	}
	require.Len(t, expired, n)
	for id, k := range expired {
		require.Equal(t, 1, k, "booking %d", id)
	}
}

// A warning less than a second before the end says so, never "ends in 0s".
func TestWarningNeverSaysZeroSeconds(t *testing.T) {
	t.Parallel()
	clock := coretest.NewFakeClock()
	c := servicetest.NewClient(t, clock, coretest.Alice)
	p, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: 3 * time.Second})
	require.NoError(t, err)
	var log actLog
	m := New(c, Options{OnAct: log.add})
	clock.Advance(2800 * time.Millisecond) // inside the lead, a tenth: 0.3 s
	_, err = m.Tick()
	require.NoError(t, err)
	evs, err := c.Events(0, 0)
	require.NoError(t, err)
	require.Equal(t, domain.EventWarned, evs[len(evs)-1].Kind)
	require.Equal(t, "ends in under a second (GPU 0)", evs[len(evs)-1].Detail)
	require.Equal(t, p.ID, evs[len(evs)-1].Partition)
}

// A process with no booking is recorded as its owner's (a real process of
// user nobody here), with the monitor's user as the one who recorded it.
func TestUnbookedEventNamesTheOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a process as nobody")
	}
	sim := gpu.NewSim(gpu.SimOptions{})
	c := servicetest.SimClient(storetest.Bolt(t)(), sim, coretest.Root, nil)
	_, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.5), Duration: time.Hour, For: "daemon"})
	require.NoError(t, err)
	stray := exec.Command("sleep", "60")
	stray.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	require.NoError(t, stray.Start())
	t.Cleanup(func() { stray.Process.Kill(); stray.Wait() })
	require.Eventually(t, func() bool { info, err := procfs.ReadProc(stray.Process.Pid); return err == nil && info.UID == 65534 }, 2*time.Second, 5*time.Millisecond)
	sim.Attach(coretest.IdleGPU, stray.Process.Pid, 2<<30)

	_, err = New(c, Options{Backend: sim}).Tick()
	require.NoError(t, err)
	evs, err := c.Events(0, 0)
	require.NoError(t, err)
	e := evs[len(evs)-1]
	require.Equal(t, domain.EventUnbooked, e.Kind)
	require.Equal(t, &domain.EventProcess{PID: stray.Process.Pid, UID: 65534, User: proc.UserName(65534)}, e.Process)
	require.Equal(t, "root", e.User)
	require.Contains(t, human.FormatEvent(e), proc.UserName(65534)+"'s pid "+strconv.Itoa(stray.Process.Pid)+": ")
}

// A minute's accounting of many bookings is written whole, in passes small
// enough for any engine: etcd refuses a transaction of more than 128
// writes by default, and one booking's usage is a write.
func TestMonitorAccountsManyBookings(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testMonitorAccountsManyBookings)
}

func testMonitorAccountsManyBookings(t *testing.T, open storetest.Opener) {
	clock := coretest.NewFakeClock()
	sim := gpu.NewSim(gpu.SimOptions{Count: 8, Now: clock.Now})
	me := proc.CurrentIdentity()
	c := core.NewClient(core.Options{Ledger: open(), As: &me, Clock: clock, Devices: simDevices(sim)})
	const n = 150
	for i := range n {
		_, err := c.Create(core.Request{Device: i % 8, Memory: human.Fraction(0.005), Duration: 4 * time.Hour})
		require.NoError(t, err)
	}
	// A sample every 5 s is as good as every second for a minute's books,
	// in a fifth of the passes.
	const every = 5 * time.Second
	m := New(c, Options{Backend: sim, SampleEvery: every})
	for range (2*60 + 30) / 5 { // past the end of the first whole minute
		clock.Advance(every)
		_, err := m.Tick()
		require.NoError(t, err)
	}
	for id := uint64(1); id <= n; id++ {
		u, err := c.BookingUsage(id)
		require.NoError(t, err)
		require.False(t, u.Through.IsZero(), "booking %d was not accounted", id)
	}
}

// NVML lists the MPS server among a GPU's processes, holding memory of its
// own and owned by whoever started the daemon (root, for a multi-user one).
// Seen on an H200: a root monitor with overbudget=terminate counted it
// against root's booking and sent it SIGTERM, which would stop every
// client's job. The server is nobody's job and is never signalled.
func TestMonitorNeverSignalsTheMPSServer(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the MPS programs must be root's files")
	}
	sim := gpu.NewSim(gpu.SimOptions{})
	c := servicetest.SimClient(storetest.Bolt(t)(), sim, proc.CurrentIdentity(), nil)
	_, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Bytes(1 << 30), Duration: time.Hour})
	require.NoError(t, err)

	// Root's programs named as MPS's: a control daemon (a copy of sh) that
	// starts its server (a copy of sleep).
	dir := t.TempDir()
	for name, from := range map[string]string{"nvidia-cuda-mps-control": "sh", "nvidia-cuda-mps-server": "sleep"} {
		path, err := exec.LookPath(from)
		require.NoError(t, err)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		coretest.WriteExecutable(t, filepath.Join(dir, name), data)
	}
	control := exec.Command(filepath.Join(dir, "nvidia-cuda-mps-control"), "-c", filepath.Join(dir, "nvidia-cuda-mps-server")+" 60; :")
	require.NoError(t, control.Start())
	t.Cleanup(func() { control.Process.Kill(); control.Wait() })
	var server *os.Process
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", control.Process.Pid, control.Process.Pid))
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return false
		}
		pid, _ := strconv.Atoi(f[0])
		info, err := procfs.ReadProc(pid)
		if err != nil || !info.MPSServer {
			return false
		}
		server, _ = os.FindProcess(pid)
		return true
	}, 5*time.Second, 5*time.Millisecond)
	t.Cleanup(func() { _ = server.Kill() })
	sim.Attach(coretest.IdleGPU, server.Pid, 3<<30) // more than the booking holds

	terminate := domain.Policy{Expiry: policy.ActTerminate, OverBudget: policy.ActTerminate, Unbooked: policy.ActTerminate, Grace: time.Second, MaxLength: time.Hour}
	var log actLog
	m := New(c, Options{Backend: sim, Policy: &terminate, OnAct: log.add})
	_, err = m.Tick()
	require.NoError(t, err)
	st, err := c.Stats(sim, procfs.MPS{})
	require.NoError(t, err)
	i := slices.IndexFunc(st.Processes, func(a admission.Attribution) bool { return a.PID == server.Pid })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, admission.MPSServer, st.Processes[i].Verdict)
	require.Zero(t, st.Processes[i].Partition, "the server counts against no booking")
	require.NotContains(t, log.kinds(), "signalled")
	require.NotContains(t, log.kinds(), "overbudget")
	require.NoError(t, server.Signal(syscall.Signal(0)), "the server still runs")
}
