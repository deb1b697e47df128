package monitor

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// BenchmarkMonitorHours runs a monitor through two simulated hours, a
// sample a second, over 100 bookings on 8 simulated GPUs (the simulation's
// own users busy on six of them, unbooked): what accounting and the idle
// ladder cost a running monitor. The bookings have no processes, so after
// idle-start they are idle, and with the ladder on each is warned at 1h15m
// of its life and again at 2h. One op is the two hours; it reports the
// ledger's write transactions per hour and the cost of a tick.
func BenchmarkMonitorHours(b *testing.B) {
	for _, reclaim := range []string{policy.ReclaimOff, policy.ReclaimAlways} {
		b.Run("reclaim="+reclaim, func(b *testing.B) {
			var writes int64
			var cpu time.Duration
			var ticks int
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				m, clock, store := hoursMonitor(b, reclaim)
				b.StartTimer()
				cpu0 := cpuTime()
				for range 2 * 3600 {
					clock.Advance(time.Second)
					if _, err := m.tick(false); err != nil {
						b.Fatal(err)
					}
					ticks++
				}
				cpu += cpuTime() - cpu0
				writes += store.Updates.Load()
			}
			b.ReportMetric(float64(writes)/float64(b.N)/2, "writes/hour")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(ticks), "µs/tick")
			b.ReportMetric(float64(cpu.Microseconds())/float64(ticks), "cpu-µs/tick")
		})
	}
}

// cpuTime is the CPU this process has used, in user and kernel mode:
// unlike the wall clock, it does not count time waiting on the disk or on
// other processes sharing the machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func hoursMonitor(b *testing.B, reclaim string) (*Monitor, *clock.Fake, *coretest.CountingStore) {
	clock := coretest.NewFakeClock()
	sim := gpu.NewSim(gpu.SimOptions{Count: 8, Now: clock.Now})
	path := filepath.Join(b.TempDir(), "chronos.db")
	c := core.NewClient(core.Options{Ledger: bolt.New(path), As: &coretest.Alice, Clock: clock,
		Devices: func() (core.Listing, error) {
			d, err := sim.Devices()
			return core.Listing{Backend: sim.Name(), Devices: d}, err
		}})
	for i := range 100 {
		if _, err := c.Create(core.Request{Device: i % 8, Memory: human.Fraction(0.01), Duration: 4 * time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	pol := policy.Default()
	pol.Unbooked, pol.Reclaim = policy.ActOff, reclaim
	store := &coretest.CountingStore{Store: bolt.New(path)}
	mc := core.NewClient(core.Options{Ledger: store, As: &coretest.Alice, Clock: clock})
	m := New(mc, Options{Backend: sim, Policy: &pol, Notify: NotifyOptions{Utmp: filepath.Join(b.TempDir(), "utmp")}})
	if _, err := m.Tick(); err != nil {
		b.Fatal(err)
	}
	store.Updates.Store(0)
	return m, clock, store
}
