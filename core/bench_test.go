package core

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// BenchmarkLedgerOps measures create and release through the public API —
// each opens the ledger, runs one durable transaction and closes it — next
// to the floor they stand on: a bare bbolt open, one small durable update
// and close on a file of the same size, measured in the same loop.
// Reported: medians in ms and each as a ratio to the bare update.
func BenchmarkLedgerOps(b *testing.B) {
	dir := b.TempDir()
	c := clientAt(filepath.Join(dir, "chronos.db"), nil, coretest.Alice)
	barePath := filepath.Join(dir, "bare.db")
	// A few live bookings in the background, as on a busy machine.
	for range 20 {
		if _, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.01), Duration: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	// GPU readings stored, as where monitors run: create reads its GPU's.
	err := c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		var rs []domain.DeviceReading
		for d := range 2 {
			r := domain.DeviceReading{Time: time.Now(), Backend: coretest.TestBackend, Index: d, UUID: fmt.Sprintf("GPU-%d", d),
				MemoryTotal: coretest.TestGPUMemory, MemoryUsed: coretest.TestGPUMemory / 2}
			for h := range admission.ReadingHolders {
				r.Holders = append(r.Holders, domain.Holder{User: "user" + strconv.Itoa(h), UID: 2000 + h, Bytes: 4 << 30, PIDs: []int{100000 + h, 100100 + h, 100200 + h}})
			}
			rs = append(rs, r)
		}
		return tx.PutDeviceReadings(rs)
	})
	if err != nil {
		b.Fatal(err)
	}
	bare := bareUpdate(b, barePath)
	b.ResetTimer()
	bareT, createT, releaseT := timeCreateRelease(b, c, bare)
	b.StopTimer()
	mb, mc, mr := median(bareT), median(createT), median(releaseT)
	b.ReportMetric(ms(mb), "bare-ms")
	b.ReportMetric(ms(mc), "create-ms")
	b.ReportMetric(ms(mr), "release-ms")
	b.ReportMetric(float64(mc)/float64(mb), "create/bare")
	b.ReportMetric(float64(mr)/float64(mb), "release/bare")
	b.ReportMetric(ms(percentile(createT, 0.99)), "create-p99-ms")
}

// bareUpdate is the floor a durable ledger write stands on: a bare bbolt
// open, one small durable update and close of the file at path.
func bareUpdate(b *testing.B, path string) func() {
	value := make([]byte, 300) // about the size of a stored booking
	return func() {
		db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 3 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		err = db.Update(func(tx *bbolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			seq, _ := bk.NextSequence()
			k := make([]byte, 8)
			binary.BigEndian.PutUint64(k, seq)
			return bk.Put(k, value)
		})
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}

// timeCreateRelease times, b.N times in one loop, the baseline bare, then a
// create of 1% of GPU 1 and its release through c.
func timeCreateRelease(b *testing.B, c *Client, bare func()) (bareT, createT, releaseT []time.Duration) {
	for range b.N {
		t0 := time.Now()
		bare()
		t1 := time.Now()
		p, err := c.Create(Request{Device: 1, Memory: human.Fraction(0.01), Duration: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := p.Release(); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		bareT = append(bareT, t1.Sub(t0))
		createT = append(createT, t2.Sub(t1))
		releaseT = append(releaseT, t3.Sub(t2))
	}
	return bareT, createT, releaseT
}

// BenchmarkList reads 1,000 live bookings, as `chronos list` does.
func BenchmarkList(b *testing.B) {
	c := clientAt(filepath.Join(b.TempDir(), "chronos.db"), nil, coretest.Alice)
	for i := range 1000 {
		if _, err := c.Create(Request{Device: i % 2, Memory: human.Bytes(1 << 20), Duration: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		parts, err := c.List(false)
		if err != nil || len(parts) != 1000 {
			b.Fatal(err, len(parts))
		}
	}
}

// BenchmarkUsage is `chronos usage` on a ledger with 2,000 bookings over the
// last 60 days, from 20 users (alice among them), each with its usage, its held interval, a
// signal and its ending in the audit trail, and 20 live bookings.
func BenchmarkUsage(b *testing.B) {
	clock := coretest.NewFakeClock()
	c := clientAt(filepath.Join(b.TempDir(), "chronos.db"), clock, coretest.Alice)
	now := clock.Now()
	if err := c.ledger.Update(c.ctx, func(tx *storage.Tx) error {
		for i := range 2000 {
			start := now.Add(-time.Duration(i) * 43 * time.Minute) // 2,000 of them span 60 days
			uid := 1001 + i%20
			p := domain.Partition{Device: i % 2, SharePPM: 250_000, UID: uid, User: "user" + strconv.Itoa(uid),
				Created: start.Add(-2 * time.Hour), Expires: start, Ended: start, State: domain.Expired}
			err := tx.PutPartition(&p)
			err = cmp.Or(err, tx.PutBookingUsage(domain.BookingUsage{Partition: p.ID, Through: p.Ended, GPUTime: time.Hour, Idle: 30 * time.Minute}))
			err = cmp.Or(err, tx.AddHeld(uid, domain.Held{Partition: p.ID, Start: p.Created, End: p.Ended, SharePPM: p.SharePPM}))
			err = cmp.Or(err, tx.PutUserUsage(domain.UserUsage{UID: uid, User: p.User, GPUSeconds: 3600, At: start}))
			err = cmp.Or(err, tx.AddEvent(domain.Event{Time: start, Kind: domain.EventSignalled, Partition: p.ID}))
			err = cmp.Or(err, tx.AddEvent(domain.Event{Time: start, Kind: domain.EventExpired, Partition: p.ID}))
			if err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	for range 20 {
		if _, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.01), Duration: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		users, err := c.Usage()
		if err != nil || len(users) != 20 {
			b.Fatal(err, len(users))
		}
	}
}

// BenchmarkMonitorExpiresAll is the monitor's pass over 100 bookings whose
// deadlines all passed (8 simulated GPUs, no processes): it ends as many
// as its transaction's write budget allows (reported as ended), charging
// their owner for each. One op is the pass, on a fresh copy of the ledger.
func BenchmarkMonitorExpiresAll(b *testing.B) {
	clock := coretest.NewFakeClock()
	sim := gpu.NewSim(gpu.SimOptions{Count: 8, Now: clock.Now})
	dir := b.TempDir()
	seed := filepath.Join(dir, "seed.db")
	c := NewClient(Options{Ledger: bolt.New(seed), As: &coretest.Alice, Clock: clock,
		Devices: func() (Listing, error) { d, err := sim.Devices(); return Listing{Backend: sim.Name(), Devices: d}, err }})
	for i := range 100 {
		if _, err := c.Create(Request{Device: i % 8, Memory: human.Fraction(0.01), Duration: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	clock.Advance(time.Hour + time.Second)
	seeded, err := os.ReadFile(seed)
	if err != nil {
		b.Fatal(err)
	}
	pol := admission.DefaultPolicy()
	pol.Unbooked = admission.ActOff
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		path := filepath.Join(dir, strconv.Itoa(i)+".db")
		if err := os.WriteFile(path, seeded, 0o600); err != nil {
			b.Fatal(err)
		}
		mc := NewClient(Options{Ledger: bolt.New(path), As: &coretest.Alice, Clock: clock})
		m := NewMonitor(mc, MonitorOptions{Backend: sim, Policy: &pol, Notify: NotifyOptions{Utmp: filepath.Join(dir, "utmp")}})
		b.StartTimer()
		if _, err := m.Tick(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		all, err := mc.List(true)
		ended := slices.DeleteFunc(all, func(p Partition) bool { return p.State != domain.Expired })
		if err != nil || len(ended) == 0 {
			b.Fatal(err, len(ended))
		}
		b.ReportMetric(float64(len(ended)), "ended")
		b.StartTimer()
	}
}

func median(d []time.Duration) time.Duration { return percentile(d, 0.5) }

func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// idleMonitor is a monitor over 100 live bookings on 8 simulated GPUs,
// with the simulated users' unbooked processes left alone so that a pass
// has nothing to do.
func idleMonitor(b *testing.B) *Monitor {
	sim := gpu.NewSim(gpu.SimOptions{Count: 8})
	c := NewClient(Options{Ledger: bolt.New(filepath.Join(b.TempDir(), "chronos.db")), As: &coretest.Alice,
		Devices: func() (Listing, error) { d, err := sim.Devices(); return Listing{Backend: sim.Name(), Devices: d}, err }})
	for i := range 100 {
		if _, err := c.Create(Request{Device: i % 8, Memory: human.Fraction(0.01), Duration: 4 * time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	pol := admission.DefaultPolicy()
	pol.Unbooked = admission.ActOff
	m := NewMonitor(c, MonitorOptions{Backend: sim, Policy: &pol})
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
		err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
			inv, _, err := tx.Inventory()
			if err != nil {
				return err
			}
			parts, err := tx.LivePartitions()
			if err != nil {
				return err
			}
			if physical {
				if a := c.availabilityOf(tx, c.host, inv, admission.CalendarOf(parts), parts, nil, inv.Devices[1], time.Now()); !a.Physical.Known {
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
	b.ReportMetric(float64(median(without).Microseconds()), "without-µs")
	b.ReportMetric(float64(median(with).Microseconds()), "with-µs")
	b.ReportMetric(float64(median(with)-median(without))/1e3, "added-µs")
}
