package core

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// engines are the stores the benchmarks compare, started fresh in one run:
// the ledger file (the baseline), a local one-member etcd and a local
// three-member etcd cluster, each on this machine's disk.
func engines(b *testing.B) []struct {
	name  string
	fresh func(testing.TB) storage.Store // a new, empty ledger
} {
	one, three := etcdtest.Start(b, 1), etcdtest.Start(b, 3)
	return []struct {
		name  string
		fresh func(testing.TB) storage.Store
	}{
		{"bbolt", func(b testing.TB) storage.Store { return storetest.Bolt(b)() }},
		{"etcd-1", func(b testing.TB) storage.Store { return storetest.Etcd(b, one)() }},
		{"etcd-3", func(b testing.TB) storage.Store { return storetest.Etcd(b, three)() }},
	}
}

// BenchmarkStores times create, release and list through the public API on
// each engine in the same run (-benchtime Nx sets the iterations): with 20
// other live bookings present for create and release, and list reading 100
// live bookings, as a busy lab's would. On etcd a bare one-key Txn put is the
// floor.
func BenchmarkStores(b *testing.B) {
	for _, e := range engines(b) {
		b.Run(e.name, func(b *testing.B) {
			s := e.fresh(b)
			c := clientOn(s, nil, coretest.Alice)
			for range 20 {
				if _, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.01), Duration: time.Hour}); err != nil {
					b.Fatal(err)
				}
			}
			bare := func() {}
			if es, ok := s.(*etcd.Store); ok {
				k := es.Prefix() + "/bare"
				value := strings.Repeat("x", 300)
				bare = func() {
					if _, err := es.Client().Txn(context.Background()).Then(clientv3.OpPut(k, value)).Commit(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ResetTimer()
			bareT, createT, releaseT := timeCreateRelease(b, c, bare)
			b.StopTimer()
			for range 80 {
				if _, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.001), Duration: time.Hour}); err != nil {
					b.Fatal(err)
				}
			}
			var listT []time.Duration
			for range max(20, b.N/4) {
				t0 := time.Now()
				parts, err := c.List(false)
				if err != nil || len(parts) != 100 {
					b.Fatal(err, len(parts))
				}
				listT = append(listT, time.Since(t0))
			}
			if _, ok := s.(*etcd.Store); ok {
				b.ReportMetric(ms(median(bareT)), "bare-txn-ms")
			}
			b.ReportMetric(ms(median(createT)), "create-p50-ms")
			b.ReportMetric(ms(percentile(createT, 0.99)), "create-p99-ms")
			b.ReportMetric(ms(median(releaseT)), "release-p50-ms")
			b.ReportMetric(ms(percentile(releaseT, 0.99)), "release-p99-ms")
			b.ReportMetric(ms(median(listT)), "list100-p50-ms")
			b.ReportMetric(ms(percentile(listT, 0.99)), "list100-p99-ms")
		})
	}
}

// BenchmarkVisibility times how long a booking made on one host takes to
// show in another host's app: from the start of Create on gpu2 until gpu1,
// woken by the ledger's change notice, has read what its app reads (as
// loadCmd does) and found the booking. One-member etcd.
func BenchmarkVisibility(b *testing.B) {
	open := storetest.Etcd(b, etcdtest.Start(b, 1))
	maker := hostClient(open(), "gpu2", coretest.Bob)
	viewer := hostClient(open(), "gpu1", coretest.Alice)
	if _, err := viewer.Available(-1); err != nil { // caches gpu1's inventory, as its app does
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := viewer.Ledger().Changes(ctx, time.Second)
	seen := func(id uint64) bool {
		parts, err := viewer.Recent(0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := viewer.Available(-1); err != nil {
			b.Fatal(err)
		}
		for _, p := range parts {
			if p.ID == id {
				return true
			}
		}
		return false
	}
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		p, err := maker.Create(Request{Device: i % 2, Memory: human.Fraction(0.001), Duration: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		for found := false; !found; {
			select {
			case <-changes:
				found = seen(p.ID)
			case <-time.After(5 * time.Second):
				b.Fatalf("booking %d not seen within 5 s", p.ID)
			}
		}
		took = append(took, time.Since(start))
		if err := p.Release(); err != nil {
			b.Fatal(err)
		}
		<-changes // the release's notice
	}
	b.StopTimer()
	b.ReportMetric(ms(median(took)), "visible-p50-ms")
	b.ReportMetric(ms(percentile(took, 0.99)), "visible-p99-ms")
}

// BenchmarkMonitorLoad counts what one host's headless monitor asks of etcd
// — 8 simulated GPUs, 100 live bookings of its host, nothing to enforce —
// as messages etcd received, from its own counters, per second. Each
// iteration runs the monitor 30 s on a fresh one-member etcd, counting
// after its first 5 s (its start reads everything once).
func BenchmarkMonitorLoad(b *testing.B) {
	for range b.N {
		b.StopTimer()
		cl := etcdtest.Start(b, 1)
		s := storetest.Etcd(b, cl)()
		sim := gpu.NewSim(gpu.SimOptions{Count: 8})
		c := NewClient(Options{Ledger: s, As: &coretest.Alice, Host: "gpu1", Devices: simDevices(sim)})
		for i := range 100 {
			if _, err := c.Create(Request{Device: i % 8, Memory: human.Fraction(0.01), Duration: 4 * time.Hour}); err != nil {
				b.Fatal(err)
			}
		}
		pol := admission.DefaultPolicy()
		pol.Unbooked = admission.ActOff
		ctx, cancel := context.WithCancel(context.Background())
		go NewMonitor(c, MonitorOptions{Backend: sim, Policy: &pol}).Run(ctx)
		time.Sleep(5 * time.Second)
		before := etcdMessages(b, cl)
		b.StartTimer()
		start := time.Now()
		time.Sleep(30 * time.Second)
		took := time.Since(start)
		after := etcdMessages(b, cl)
		cancel()
		var total float64
		for m, n := range after {
			d := n - before[m]
			total += d
			if d > 0 {
				b.Logf("%-40s %6.2f/s", m, d/took.Seconds())
			}
		}
		b.ReportMetric(total/took.Seconds(), "etcd-msgs/s")
	}
}

// BenchmarkMonitorMinutesEtcd counts what one host's monitor asks of etcd
// over ten minutes of a fake clock, a pass a second — 8 simulated GPUs
// (their simulated users' unbooked load left alone), 100 live bookings of
// its host — as messages etcd received, from its own counters, per
// minute: reads (Range) and transactions (Txn). Most passes read nothing;
// once a minute the monitor writes the minute's accounting.
func BenchmarkMonitorMinutesEtcd(b *testing.B) {
	for range b.N {
		b.StopTimer()
		cl := etcdtest.Start(b, 1)
		clock := coretest.NewFakeClock()
		sim := gpu.NewSim(gpu.SimOptions{Count: 8, Now: clock.Now})
		c := NewClient(Options{Ledger: storetest.Etcd(b, cl)(), As: &coretest.Alice, Host: "gpu1", Clock: clock, Devices: simDevices(sim)})
		for i := range 100 {
			if _, err := c.Create(Request{Device: i % 8, Memory: human.Fraction(0.01), Duration: 4 * time.Hour}); err != nil {
				b.Fatal(err)
			}
		}
		pol := admission.DefaultPolicy()
		pol.Unbooked = admission.ActOff
		m := NewMonitor(c, MonitorOptions{Backend: sim, Policy: &pol, Notify: NotifyOptions{Utmp: filepath.Join(b.TempDir(), "utmp")}})
		if _, err := m.Tick(); err != nil {
			b.Fatal(err)
		}
		before := etcdMessages(b, cl)
		b.StartTimer()
		const minutes = 10
		for range minutes * 60 {
			clock.Advance(time.Second)
			if _, err := m.tick(false); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		after := etcdMessages(b, cl)
		b.ReportMetric((after["Range"]-before["Range"])/minutes, "ranges/min")
		b.ReportMetric((after["Txn"]-before["Txn"])/minutes, "txns/min")
	}
}

// etcdMessages reads etcd's count of messages received, by gRPC method.
func etcdMessages(b *testing.B, c *etcdtest.Cluster) map[string]float64 {
	resp, err := http.Get(c.Members[0].ClientURL + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "grpc_server_msg_received_total{") {
			continue
		}
		i := strings.Index(line, `grpc_method="`)
		j := strings.LastIndex(line, " ")
		if i < 0 || j < 0 {
			continue
		}
		method := line[i+len(`grpc_method="`):]
		method = method[:strings.IndexByte(method, '"')]
		n, err := strconv.ParseFloat(line[j+1:], 64)
		if err != nil {
			b.Fatal(fmt.Errorf("metrics line %q: %w", line, err))
		}
		out[method] += n
	}
	return out
}

var _ storage.Store = (*etcd.Store)(nil)
