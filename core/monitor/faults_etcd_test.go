package monitor

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// Faults of a lab on etcd, each with what the people and the audit trail
// see (issue #24, "Bad input and faults").

// eventsOf are the ledger's events of booking id.
func eventsOf(t *testing.T, c *core.Client, id uint64) []domain.Event {
	t.Helper()
	evs, err := c.Events(0, 0)
	require.NoError(t, err)
	var out []domain.Event
	for _, e := range evs {
		if e.Partition == id {
			out = append(out, e)
		}
	}
	return out
}

func countKind(evs []domain.Event, kind domain.EventKind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// Two members of three killed (no majority: the one left answers nothing
// it can vouch for) at a booking's deadline: the monitor stops the
// booking's process from what it last read, says the ledger cannot be
// reached, and once the two are back records the expiry, once, without
// signalling again; nothing written before is lost.
func TestMonitorEnforcesThroughLostQuorum(t *testing.T) {
	t.Parallel()
	cl := etcdtest.Start(t, 3)
	s := storetest.Etcd(t, cl)()
	sim := gpu.NewSim(gpu.SimOptions{})
	me := proc.CurrentIdentity()
	clk := clock.NewFake(clock.System().Now())
	c := core.NewClient(core.Options{Ledger: s, As: &me, Host: "gpu1", Clock: clk, Devices: simDevices(sim)})
	p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.5), Duration: 4 * time.Second})
	require.NoError(t, err)
	other, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	job := startChild(t, p.ID, "sleep 60")
	sim.Attach(coretest.IdleGPU, job.Process.Pid, 1<<30)

	var log actLog
	passes := &passCount{}
	pol := policy.Default()
	m := New(c, Options{Backend: sim, Policy: &pol, OnAct: log.add, Observer: passes, SampleEvery: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = m.Run(ctx) }()
	require.Eventually(t, func() bool { return passes.n.Load() > 0 }, 15*time.Second, 10*time.Millisecond, "the monitor has read the ledger")
	cl.Members[1].Kill()
	cl.Members[2].Kill()

	lost := time.Now()
	clk.Set(p.Expires)
	ws := coretest.WaitStatus(t, job, 30*time.Second)
	require.Equal(t, syscall.SIGTERM, ws.Signal())
	t.Logf("stopped %s after the deadline, etcd's timeout included", time.Since(lost).Round(time.Millisecond))
	require.Eventually(t, func() bool { _, ok := log.find(domain.EventSignalled, p.ID); return ok }, 10*time.Second, 10*time.Millisecond)
	sig, _ := log.find(domain.EventSignalled, p.ID)
	require.Contains(t, sig.Detail, fmt.Sprintf("SIGTERM to sh -c sleep 60: booking #%d expired", p.ID))
	// Sent at the deadline by the monitor's watch, or by the pass that
	// found the ledger could not be reached.
	require.Regexp(t, `\((the ledger cannot be reached: acted on what it last said, not recorded there yet|sent at the deadline, before the ledger recorded the expiry)\)`, sig.Detail)
	require.Eventually(t, func() bool { _, ok := log.find(domain.EventError, 0); return ok }, 10*time.Second, 10*time.Millisecond)
	said, _ := log.find(domain.EventError, 0)
	require.Contains(t, said.Detail, "did not answer within 5s")

	require.NoError(t, cl.Members[1].Restart())
	require.NoError(t, cl.Members[2].Restart())
	require.NoError(t, cl.WaitHealthy(20*time.Second))
	coretest.AdvanceUntil(t, clk, time.Second, 30*time.Second, func() bool { // past the monitor's next try of the ledger
		got, err := c.Get(p.ID)
		return err == nil && got.State == domain.Expired
	})
	evs := eventsOf(t, c, p.ID)
	require.Equal(t, 1, countKind(evs, domain.EventCreated))
	require.Equal(t, 1, countKind(evs, domain.EventExpired), "recorded once quorum returned")
	require.Equal(t, 1, strings.Count(strings.Join(log.kinds(), " "), "signalled"), "not signalled again")
	got, err := c.Get(other.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State, "nothing else lost or ended")
}

// A host's monitor stopped (SIGSTOP, a real process) keeps its bookings
// its own while etcd keeps its status, its lease: another host's monitor,
// past the booking's deadline, leaves it alone. Once the lease lapses (the
// stopped process renews nothing), the other host ends it and says why in
// the event; the stopped monitor, continued, shows up again, and the
// booking has one ending.
func TestStoppedMonitorIsTakenOverOnlyOnceItsLeaseLapses(t *testing.T) {
	t.Parallel()
	open := storetest.Etcd(t, etcdtest.Shared(t))
	// gpuB's clock follows the real one, as gpuA's (a process of its own)
	// does, until gpuA is stopped: gpuB measures gpuA's clock right.
	clk := clock.NewFake(clock.System().Now())
	following := make(chan struct{})
	var follow atomic.Bool
	follow.Store(true)
	go func() {
		defer close(following)
		for follow.Load() {
			clk.Set(clock.System().Now())
			time.Sleep(20 * time.Millisecond)
		}
	}()
	stopFollowing := func() { follow.Store(false); <-following }
	defer func() {
		if follow.Load() {
			stopFollowing()
		}
	}()
	s := open()
	a := coretest.RoleCmd(t, "monitor", s.String(), "60s")
	a.Env = append(a.Env, "CHRONOS_TEST_HOST=gpuA")
	require.NoError(t, a.Start())
	t.Cleanup(func() { _ = a.Process.Signal(syscall.SIGCONT); _ = a.Process.Kill(); _ = a.Wait() })
	b := startHost(t, open, "gpuB", clk)
	live(t, b.c, "gpuA", true)
	require.Eventually(t, func() bool { _, ok := b.m.pub.lastSeen("gpuA"); return ok }, 15*time.Second, 10*time.Millisecond, "gpuB has measured gpuA")
	me := proc.CurrentIdentity()
	onA := core.NewClient(core.Options{Ledger: s, As: &me, Host: "gpuA", Clock: clk, Devices: servicetest.Devices})
	p, err := onA.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Minute})
	require.NoError(t, err)

	require.NoError(t, a.Process.Signal(syscall.SIGSTOP))
	waitStopped(t, a.Process.Pid)
	stopped := time.Now()
	stopFollowing()
	passAfter(t, clk, p.Expires.Add(time.Second), b)
	got, err := b.c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Live, got.State, "gpuA's lease stands: its bookings are its own")

	live(t, b.c, "gpuA", false) // the real wait: the lease's TTL on the server
	t.Logf("gpuA's status lapsed %s after SIGSTOP", time.Since(stopped).Round(100*time.Millisecond))
	coretest.AdvanceUntil(t, clk, time.Second, 15*time.Second, func() bool { _, ok := b.log.find(domain.EventExpired, p.ID); return ok })
	ended, _ := b.log.find(domain.EventExpired, p.ID)
	require.Regexp(t, `expired by gpuB: gpuA's monitor has not been seen for (\d+m)?\d+s$`, ended.Detail)
	evs := eventsOf(t, b.c, p.ID)
	require.Equal(t, ended.Detail, evs[len(evs)-1].Detail, "the audit trail says so")

	require.NoError(t, a.Process.Signal(syscall.SIGCONT))
	live(t, b.c, "gpuA", true) // a new lease: the old one is gone
	got, err = b.c.Get(p.ID)
	require.NoError(t, err)
	require.Equal(t, domain.Expired, got.State)
	require.Equal(t, 1, countKind(eventsOf(t, b.c, p.ID), domain.EventExpired), "one ending")
}

// waitStopped returns once the kernel shows pid stopped (see
// etcdtest.Member.Pause): a signal lands when the process next runs.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		i := strings.LastIndexByte(string(b), ')')
		return err == nil && i >= 0 && strings.HasPrefix(string(b[i:]), ") T")
	}, 10*time.Second, time.Millisecond)
}

// steppedClock is a host's clock that a test steps, as NTP (or a person)
// steps a machine's: base shifted by an offset that changes at once.
type steppedClock struct {
	clock.Clock
	off atomic.Int64
}

func (c *steppedClock) Now() time.Time { return c.Clock.Now().Add(time.Duration(c.off.Load())) }

func (c *steppedClock) Step(d time.Duration) { c.off.Store(int64(d)) }

// A host's clock stepped 90 s ahead, back, and 90 s behind, while its
// monitor runs among two others: each step is noticed within a few
// statuses, said once in its log and shown in its hosts' view (what
// backends and the app show); while ahead it ends no booking of a host
// whose monitor is gone, though its clock is past that booking's deadline
// from the moment of the step (a host whose clock agrees ends it, at its
// deadline), and it ends its own by its own clock, saying when is in doubt.
func TestClockSteppedOnAHost(t *testing.T) {
	t.Parallel()
	open := storetest.Etcd(t, etcdtest.Shared(t))
	clk := coretest.NewFakeClock()
	me := proc.CurrentIdentity()
	// gpuD has no monitor: the others keep its bookings' books.
	lone := core.NewClient(core.Options{Ledger: open(), As: &me, Host: "gpuD", Clock: clk, Devices: servicetest.Devices})
	a := startHost(t, open, "gpuA", clk)
	c := startHost(t, open, "gpuC", clk)
	bclk := &steppedClock{Clock: clk}
	b := startHost(t, open, "gpuB", bclk)
	for _, h := range []string{"gpuA", "gpuB", "gpuC"} {
		live(t, a.c, h, true)
	}
	measuredAll := func() bool {
		for _, h := range []*labHost{a, b, c} {
			for _, o := range []string{"gpuA", "gpuB", "gpuC"} {
				if _, ok := h.m.pub.lastSeen(o); o != h.c.Host() && !ok {
					return false
				}
			}
		}
		return true
	}
	// Slowly enough for statuses to arrive (through etcd's watch, in real
	// time) before the fake clock moves on by anything like the 2 s bound.
	stepUntil := func(cond func() bool, msg string) {
		t.Helper()
		require.Eventually(t, func() bool {
			if cond() {
				return true
			}
			clk.Advance(presenceEvery / 4)
			return false
		}, 20*time.Second, 50*time.Millisecond, msg)
	}
	stepUntil(measuredAll, "the hosts measure each other")
	theirs, err := lone.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Minute})
	require.NoError(t, err)
	own, err := b.c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: 2 * time.Minute})
	require.NoError(t, err)

	clockSaid := func(h *labHost, n int) func() bool {
		return func() bool {
			h.log.mu.Lock()
			defer h.log.mu.Unlock()
			k := 0
			for _, a := range h.log.acts {
				if a.Kind == domain.EventClock {
					k++
				}
			}
			return k >= n
		}
	}
	lastClock := func(h *labHost) string {
		h.log.mu.Lock()
		defer h.log.mu.Unlock()
		for i := len(h.log.acts) - 1; i >= 0; i-- {
			if h.log.acts[i].Kind == domain.EventClock {
				return h.log.acts[i].Detail
			}
		}
		return ""
	}

	// +90 s: gpuB's clock is past gpuD's deadline at once.
	stepped := clk.Now()
	bclk.Step(90 * time.Second)
	stepUntil(clockSaid(b, 1), "gpuB says its clock is in doubt")
	t.Logf("gpuB in doubt %s after the step", clk.Now().Sub(stepped))
	require.Regexp(t, `^gpuB's clock is (89|9[01])\.\d s ahead of the other hosts' \(1 of 3 hosts within 2s of it\): its monitor ends only gpuB's bookings`, lastClock(b))
	_, early := b.log.find(domain.EventExpired, theirs.ID)
	require.False(t, early, "gpuB ended gpuD's booking by its stepped clock")
	aheadWarning := regexp.MustCompile(`^gpuB's clock is (89|9[01])\.\d s ahead`)
	stepUntil(func() bool { // what backends shows on gpuB, once it has published what it measured
		hosts, err := b.c.Hosts()
		require.NoError(t, err)
		return aheadWarning.MatchString(strings.Join(core.SkewWarnings("gpuB", hosts), "\n"))
	}, "backends on gpuB warns")

	passAfter(t, clk, own.Expires.Add(-90*time.Second), b)
	require.Eventually(t, func() bool { _, ok := b.log.find(domain.EventExpired, own.ID); return ok }, 15*time.Second, 10*time.Millisecond)
	ended, _ := b.log.find(domain.EventExpired, own.ID)
	require.Regexp(t, `by gpuB's clock, which is (89|9[01])\.\d s ahead of the other hosts': when it ended is in doubt`, ended.Detail)
	// At gpuD's deadline by the lab's clock, a host whose clock agrees
	// ends it, not gpuB.
	coretest.SettleAt(t, clk, theirs.Expires, 15*time.Second, func() bool {
		got, err := lone.Get(theirs.ID)
		return err == nil && got.State == domain.Expired
	})
	require.False(t, clk.Now().Before(theirs.Expires))
	_, byB := b.log.find(domain.EventExpired, theirs.ID)
	require.False(t, byB)
	evs := eventsOf(t, lone, theirs.ID)
	require.Regexp(t, `expired by gpu[AC]: no monitor of gpuD is publishing`, evs[len(evs)-1].Detail)

	// Stepped back: it agrees again, and says so.
	bclk.Step(0)
	stepUntil(clockSaid(b, 2), "gpuB says its clock agrees again")
	require.Contains(t, lastClock(b), "gpuB's clock agrees with the lab's again (3 of 3 hosts within 2s)")

	// −90 s.
	bclk.Step(-90 * time.Second)
	stepUntil(clockSaid(b, 3), "gpuB says its clock is in doubt again")
	require.Regexp(t, `^gpuB's clock is (89|9[01])\.\d s behind the other hosts'`, lastClock(b))
	for _, h := range []*labHost{a, c} {
		_, ok := h.log.find(domain.EventClock, 0)
		require.False(t, ok, "%s's clock agrees with most", h.c.Host())
	}
}
