package core

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// BenchmarkGangAdmission is issue 23's first figure: admitting (Create) a
// booking of all 8 GPUs of an 8-GPU ledger file holding 100 live
// bookings, named (0-7) and as any --gpus 8 (placed by topology), next to
// a booking of one GPU made in the same loop, on the same ledger. Each
// booking is released again before the next, so every create weighs the
// same 100. Reported: p50 and p99 of each in ms, and the gang's p50 over
// the one-GPU create's and over a bare bbolt update in the same loop (the
// floor a durable write stands on, which a loaded disk moves most).
func BenchmarkGangAdmission(b *testing.B) {
	clk := coretest.NewFakeClock()
	c := gangLedger(b, clk)
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	create := func(req Request) time.Duration {
		t0 := time.Now()
		p, err := c.Create(req)
		took := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.GPUs()) != max(1, len(req.Devices), req.Count) {
			b.Fatalf("booked GPUs %v for %+v", p.GPUs(), req)
		}
		if err := p.Release(); err != nil {
			b.Fatal(err)
		}
		return took
	}
	bare := bareUpdate(b, filepath.Join(b.TempDir(), "bare.db"))
	var named, anyN, one, floor []time.Duration
	share := human.Fraction(0.01)
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		bare()
		floor = append(floor, time.Since(t0))
		named = append(named, create(Request{Device: 0, Devices: all, Memory: share, Duration: time.Hour}))
		anyN = append(anyN, create(Request{Device: domain.AnyDevice, Count: 8, Memory: share, Duration: time.Hour}))
		one = append(one, create(Request{Device: i % 8, Memory: share, Duration: time.Hour}))
	}
	b.ReportMetric(coretest.Ms(coretest.Median(named)), "gang8-p50-ms")
	b.ReportMetric(coretest.Ms(coretest.Percentile(named, 0.99)), "gang8-p99-ms")
	b.ReportMetric(coretest.Ms(coretest.Median(anyN)), "any8-p50-ms")
	b.ReportMetric(coretest.Ms(coretest.Percentile(anyN, 0.99)), "any8-p99-ms")
	b.ReportMetric(coretest.Ms(coretest.Median(one)), "one-p50-ms")
	b.ReportMetric(coretest.Ms(coretest.Percentile(one, 0.99)), "one-p99-ms")
	b.ReportMetric(float64(coretest.Median(named))/float64(coretest.Median(one)), "gang8/one")
	b.ReportMetric(float64(coretest.Median(anyN))/float64(coretest.Median(one)), "any8/one")
	b.ReportMetric(coretest.Ms(coretest.Median(floor)), "bare-ms")
	b.ReportMetric(float64(coretest.Median(named))/float64(coretest.Median(floor)), "gang8/bare")
}

// gangLedger is a client of 8 simulated, NVLinked GPUs on a ledger file
// with 100 live bookings of four users, as on a busy shared box: 80 of
// one GPU and 20 of 2, 4 or 8, of 1–4% each, an hour to eight long, a
// tenth of them booked ahead, so that no GPU is full and the calendar
// has many instants to weigh.
func gangLedger(b *testing.B, clk *clock.Fake) *Client {
	b.Helper()
	sim := gpu.NewSim(gpu.SimOptions{Count: 8, Now: clk.Now})
	topo := gpu.NewTopology(8)
	for x := range 8 {
		for y := x + 1; y < 8; y++ {
			topo.SetLink(x, y, gpu.Link{Level: gpu.LinkNVLink, NVLinks: 18})
		}
	}
	path := filepath.Join(b.TempDir(), "chronos.db")
	devices := func() (Listing, error) {
		d, err := sim.Devices()
		return Listing{Backend: sim.Name(), Devices: d, Topology: topo}, err
	}
	users := []domain.Identity{coretest.Alice, coretest.Bob, {UID: 1003, User: "carol"}, {UID: 1004, User: "dave"}}
	for i := range 100 {
		who := users[i%len(users)]
		c := NewClient(Options{Ledger: bolt.New(path), As: &who, Clock: clk, Devices: devices})
		req := Request{Device: i % 8, Memory: human.Fraction(0.01 * float64(1+i%4)), Duration: time.Duration(1+i%8) * time.Hour}
		if i%5 == 4 { // a fifth of them of several GPUs
			n := []int{2, 4, 8}[i/5%3]
			req.Device, req.Count = domain.AnyDevice, n
		}
		if i%10 == 9 {
			req.Start = clk.Now().Add(time.Duration(i) * time.Minute)
		}
		if _, err := c.Create(req); err != nil {
			b.Fatal(err)
		}
	}
	return NewClient(Options{Ledger: bolt.New(path), As: &coretest.Alice, Clock: clk, Devices: devices})
}
