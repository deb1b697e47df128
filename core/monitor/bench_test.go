package monitor

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// BenchmarkMonitorExpiresAll is the monitor's pass over 100 bookings whose
// deadlines all passed (8 simulated GPUs, no processes): it ends as many
// as its transaction's write budget allows (reported as ended), charging
// their owner for each. One op is the pass, on a fresh copy of the ledger.
func BenchmarkMonitorExpiresAll(b *testing.B) {
	clock := coretest.NewFakeClock()
	sim := gpu.NewSim(gpu.SimOptions{Count: 8, Now: clock.Now})
	dir := b.TempDir()
	seed := filepath.Join(dir, "seed.db")
	c := core.NewClient(core.Options{Ledger: bolt.New(seed), As: &coretest.Alice, Clock: clock,
		Devices: func() (core.Listing, error) {
			d, err := sim.Devices()
			return core.Listing{Backend: sim.Name(), Devices: d}, err
		}})
	for i := range 100 {
		if _, err := c.Create(core.Request{Device: i % 8, Memory: human.Fraction(0.01), Duration: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	clock.Advance(time.Hour + time.Second)
	seeded, err := os.ReadFile(seed)
	if err != nil {
		b.Fatal(err)
	}
	pol := policy.Default()
	pol.Unbooked = policy.ActOff
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		path := filepath.Join(dir, strconv.Itoa(i)+".db")
		if err := os.WriteFile(path, seeded, 0o600); err != nil {
			b.Fatal(err)
		}
		mc := core.NewClient(core.Options{Ledger: bolt.New(path), As: &coretest.Alice, Clock: clock})
		m := New(mc, Options{Backend: sim, Policy: &pol, Notify: NotifyOptions{Utmp: filepath.Join(dir, "utmp")}})
		b.StartTimer()
		if _, err := m.Tick(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		all, err := mc.List(true)
		ended := slices.DeleteFunc(all, func(p core.Partition) bool { return p.State != domain.Expired })
		if err != nil || len(ended) == 0 {
			b.Fatal(err, len(ended))
		}
		b.ReportMetric(float64(len(ended)), "ended")
		b.StartTimer()
	}
}

// idleMonitor is a monitor over 100 live bookings on 8 simulated GPUs,
// with the simulated users' unbooked processes left alone so that a pass
// has nothing to do.
func idleMonitor(b *testing.B) *Monitor {
	sim := gpu.NewSim(gpu.SimOptions{Count: 8})
	c := core.NewClient(core.Options{Ledger: bolt.New(filepath.Join(b.TempDir(), "chronos.db")), As: &coretest.Alice,
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
	pol.Unbooked = policy.ActOff
	m := New(c, Options{Backend: sim, Policy: &pol})
	if _, err := m.Tick(); err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkMonitorTick is one pass that reads the ledger: what a monitor
// does when the ledger changed.
func BenchmarkMonitorTick(b *testing.B) {
	m := idleMonitor(b)
	b.ResetTimer()
	for range b.N {
		m.nextSample = time.Time{}
		if _, err := m.Tick(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMonitorIdleTick is the same pass with the ledger unchanged, as a
// running monitor makes it every second: from its snapshot, sampling the
// GPUs.
func BenchmarkMonitorIdleTick(b *testing.B) {
	m := idleMonitor(b)
	b.ResetTimer()
	for range b.N {
		m.nextSample = time.Time{}
		if _, err := m.tick(false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateReadsPhysical is what reading a GPU's stored memory
// reading adds to create's transaction: a read-only transaction that reads
// the inventory and the live bookings (as create does), with and without
// physicalIn, in the same loop, on the idle monitor's ledger (8 GPUs, 100
// bookings, each GPU's reading stored by the monitor's first pass).
func BenchmarkCreateReadsPhysical(b *testing.B) {
	c := idleMonitor(b).c
	read := func(physical bool) time.Duration {
		t0 := time.Now()
		err := c.Ledger().View(c.Context(), func(tx *storage.Tx) error {
			inv, _, err := tx.Inventory()
			if err != nil {
				return err
			}
			parts, err := tx.LivePartitions()
			if err != nil {
				return err
			}
			if physical {
				if a := c.AvailabilityOf(tx, c.Host(), inv, admission.CalendarOf(parts), parts, nil, inv.Devices[1], time.Now()); !a.Physical.Known {
					b.Fatal("no reading")
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	var without, with []time.Duration
	b.ResetTimer()
	for range b.N {
		without = append(without, read(false))
		with = append(with, read(true))
	}
	b.StopTimer()
	b.ReportMetric(float64(coretest.Median(without).Microseconds()), "without-µs")
	b.ReportMetric(float64(coretest.Median(with).Microseconds()), "with-µs")
	b.ReportMetric(float64(coretest.Median(with)-coretest.Median(without))/1e3, "added-µs")
}
