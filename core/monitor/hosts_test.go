package monitor

import (
	"context"
	"slices"
	"strings"
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
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// Each host's monitor matches processes only against its own host's
// bookings: a booking of another host's GPU 3 neither claims a process on
// this host's GPU 3 nor makes this GPU "booked" for the unbooked rule.
func TestMonitorEnforcesOnlyItsHost(t *testing.T) {
	t.Parallel()
	storetest.Each(t, testMonitorEnforcesOnlyItsHost)
}

func testMonitorEnforcesOnlyItsHost(t *testing.T, open storetest.Opener) {
	s := open()
	me := proc.CurrentIdentity()
	sim := gpu.NewSim(gpu.SimOptions{})
	here := core.NewClient(core.Options{Ledger: s, As: &me, Host: "gpu1", Devices: simDevices(sim)})
	there := core.NewClient(core.Options{Ledger: open(), As: &coretest.Bob, Host: "gpu2", Devices: simDevices(sim)})
	theirs, err := there.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	// A process here names gpu2's booking (a job copied from there), and
	// one of another user has no booking at all.
	named := startChild(t, theirs.ID, "sleep 60")
	stray := startChild(t, 0, "sleep 60")
	sim.Attach(coretest.IdleGPU, named.Process.Pid, 1<<30)
	sim.Attach(coretest.IdleGPU, stray.Process.Pid, 1<<30)

	strict := domain.Policy{Expiry: policy.ActTerminate, OverBudget: policy.ActTerminate, Unbooked: policy.ActTerminate, Grace: time.Second, MaxLength: time.Hour}
	var log actLog
	m := New(here, Options{Backend: sim, Policy: &strict, OnAct: log.add})
	_, err = m.Tick()
	require.NoError(t, err)
	require.Empty(t, log.kinds(), "nothing on this host's GPU 3 is booked, so nothing is enforced")
	require.Nil(t, named.ProcessState)
	require.Nil(t, stray.ProcessState)

	st, err := here.Stats(sim, procfs.MPS{})
	require.NoError(t, err)
	require.Zero(t, st.Booked[coretest.IdleGPU].Count, "the GPU panel here shows no booking of gpu2's GPU 3")
}

// simDevices lists sim's GPUs as stand-ins for real ones (testBackend): a
// ledger many hosts share records no simulated GPUs but root's.
func simDevices(sim *gpu.Sim) core.DeviceSource {
	return func() (core.Listing, error) {
		devs, err := sim.Devices()
		return core.Listing{Backend: coretest.TestBackend, Devices: devs}, err
	}
}

// A host's monitor, killed, stops publishing: within the TTL its GPUs show
// as not live (still listed, from the ledger), and its bookings stay.
func TestDeadHostFades(t *testing.T) {
	t.Parallel()
	s := storetest.Etcd(t, etcdtest.Shared(t))()
	other := servicetest.HostClient(s, "gpu2", coretest.Bob)
	mon := coretest.RoleCmd(t, "monitor", s.String(), "60s")
	mon.Env = append(mon.Env, "CHRONOS_TEST_HOST=gpu1")
	require.NoError(t, mon.Start())
	t.Cleanup(func() { mon.Process.Kill(); mon.Wait() })
	gpu1 := func() core.HostView {
		hosts, err := other.Hosts()
		require.NoError(t, err)
		for _, h := range hosts {
			if h.Host == "gpu1" {
				return h
			}
		}
		return core.HostView{}
	}
	require.Eventually(t, func() bool { return gpu1().Live() }, 10*time.Second, 100*time.Millisecond)
	require.Len(t, gpu1().Status.Devices, 4, "its GPUs, live")
	p, err := other.Create(core.Request{Host: "gpu1", Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)

	require.NoError(t, mon.Process.Kill())
	_ = mon.Wait()
	killed := time.Now()
	require.Eventually(t, func() bool { return !gpu1().Live() }, presenceTTL+5*time.Second, 100*time.Millisecond)
	t.Logf("faded %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	require.Len(t, gpu1().Inventory.Devices, 4, "its GPUs are still known")
	got, err := other.Get(p.ID)
	require.NoError(t, err)
	require.True(t, got.LiveAt(clock.System().Now()), "its bookings stay")
}

// Each monitor measures the other hosts' clocks from their statuses; a host
// more than a second off is warned about, from either side.
func TestClockSkewIsMeasured(t *testing.T) {
	t.Parallel()
	open := storetest.Etcd(t, etcdtest.Shared(t))
	// Two hosts on fake clocks 3 s apart: the fake time stands still while
	// a status travels between them, so the skew measured is exactly 3 s
	// (a reading taken across an Advance is smaller, and the largest wins).
	clk := coretest.NewFakeClock()
	ahead := clock.Offset(clk, 3*time.Second)
	sim := gpu.NewSim(gpu.SimOptions{})
	me := proc.CurrentIdentity()
	fast := core.NewClient(core.Options{Ledger: open(), As: &me, Host: "gpu1", Clock: ahead, Devices: simDevices(sim)})
	right := core.NewClient(core.Options{Ledger: open(), As: &me, Host: "gpu2", Clock: clk, Devices: simDevices(sim)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []*core.Client{fast, right} {
		go New(c, Options{Backend: sim}).Run(ctx)
	}
	for _, tc := range []struct {
		c    *core.Client
		peer string
		skew time.Duration
		warn string
	}{
		{right, "gpu1", 3 * time.Second, "gpu1's clock is 3.0 s ahead of this host's"},
		{fast, "gpu2", -3 * time.Second, "gpu2's clock is 3.0 s behind this host's"},
	} {
		var view core.HostView
		require.Eventually(t, func() bool {
			hosts, err := tc.c.Hosts()
			require.NoError(t, err)
			for _, h := range hosts {
				if h.Host == tc.peer {
					view = h
				}
			}
			if view.SkewKnown && view.Skew == tc.skew {
				return true
			}
			clk.Advance(presenceEvery) // the hosts publish again, with what they measured
			return false
		}, 15*time.Second, 50*time.Millisecond, "as %s sees %s: %+v", tc.c.Host(), tc.peer, view)
		// Two hosts more than SkewBound apart: neither can tell whose
		// clock is wrong, so each says its own is in doubt, first.
		warnings := core.SkewWarnings(tc.c.Host(), []core.HostView{view})
		require.Len(t, warnings, 2)
		require.True(t, strings.HasPrefix(warnings[0], tc.c.Host()+"'s clock is 3.0 s "), warnings[0])
		require.Contains(t, warnings[0], "(1 of 2 hosts within 2s of it)")
		require.True(t, strings.HasPrefix(warnings[1], tc.warn), warnings[1])
	}
}

// With etcd down, a host's monitor still ends bookings at their deadlines:
// it stops their processes from what it last read (SIGTERM, then SIGKILL
// after the grace), says it could not record that, and once etcd is back
// the ledger catches up: the booking is expired, the act not repeated.
func TestMonitorEnforcesWhileEtcdIsDown(t *testing.T) {
	t.Parallel()
	cl := etcdtest.Start(t, 1)
	s := storetest.Etcd(t, cl)()
	sim := gpu.NewSim(gpu.SimOptions{})
	me := proc.CurrentIdentity()
	// The deadline, the grace and the retry are the fake clock's; the
	// server, its outage and the processes are real.
	clk := clock.NewFake(clock.System().Now())
	c := core.NewClient(core.Options{Ledger: s, As: &me, Host: "gpu1", Clock: clk, Devices: simDevices(sim)})
	p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.5), Duration: 4 * time.Second})
	require.NoError(t, err)
	polite := startChild(t, p.ID, "sleep 60")
	stubborn := startChild(t, p.ID, `trap "" TERM; while :; do sleep 0.05; done`)
	sim.Attach(coretest.IdleGPU, polite.Process.Pid, 1<<30)
	sim.Attach(coretest.IdleGPU, stubborn.Process.Pid, 1<<30)

	var log actLog
	pol := policy.Default()
	pol.Grace = time.Second
	m := New(c, Options{Backend: sim, Policy: &pol, OnAct: log.add, SampleEvery: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	clk.Set(p.Expires.Add(-100 * time.Millisecond)) // inside the warning lead
	require.Eventually(t, func() bool { return slices.Contains(log.kinds(), "warned") }, 15*time.Second, 10*time.Millisecond)
	cl.Members[0].Kill()

	clk.Set(p.Expires)
	ws := coretest.WaitStatus(t, polite, 30*time.Second)
	require.Equal(t, syscall.SIGTERM, ws.Signal())
	log.mu.Lock()
	for _, a := range log.acts {
		t.Logf("  %+.3fs %s %s", a.Time.Sub(p.Expires).Seconds(), a.Kind, a.Detail)
	}
	log.mu.Unlock()
	killed := make(chan struct{})
	go func() { _ = stubborn.Wait(); close(killed) }()
	coretest.AdvanceUntil(t, clk, 100*time.Millisecond, 30*time.Second, func() bool { return coretest.IsClosed(killed) }, "SIGKILL after the grace")
	require.Equal(t, syscall.SIGKILL, stubborn.ProcessState.Sys().(syscall.WaitStatus).Signal())
	require.Eventually(t, func() bool { return strings.Count(strings.Join(log.kinds(), " "), "signalled") == 3 }, 10*time.Second, 10*time.Millisecond, "%v", log.kinds())
	require.Contains(t, log.kinds(), "error", "the monitor says the ledger cannot be reached")

	require.NoError(t, cl.Members[0].Restart())
	require.NoError(t, cl.WaitHealthy(20*time.Second))
	coretest.AdvanceUntil(t, clk, time.Second, 30*time.Second, func() bool { // past the monitor's next try of the ledger
		got, err := c.Get(p.ID)
		return err == nil && got.State == domain.Expired
	})
	require.Equal(t, 3, strings.Count(strings.Join(log.kinds(), " "), "signalled"), "nothing signalled twice")
}
