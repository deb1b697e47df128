package monitor

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

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

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
		c := core.NewClient(core.Options{Ledger: s, As: &coretest.Alice, Host: "gpu1", Devices: simDevices(sim)})
		for i := range 100 {
			if _, err := c.Create(core.Request{Device: i % 8, Memory: human.Fraction(0.01), Duration: 4 * time.Hour}); err != nil {
				b.Fatal(err)
			}
		}
		pol := policy.Default()
		pol.Unbooked = policy.ActOff
		ctx, cancel := context.WithCancel(context.Background())
		go New(c, Options{Backend: sim, Policy: &pol}).Run(ctx)
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
		c := core.NewClient(core.Options{Ledger: storetest.Etcd(b, cl)(), As: &coretest.Alice, Host: "gpu1", Clock: clock, Devices: simDevices(sim)})
		for i := range 100 {
			if _, err := c.Create(core.Request{Device: i % 8, Memory: human.Fraction(0.01), Duration: 4 * time.Hour}); err != nil {
				b.Fatal(err)
			}
		}
		pol := policy.Default()
		pol.Unbooked = policy.ActOff
		m := New(c, Options{Backend: sim, Policy: &pol, Notify: NotifyOptions{Utmp: filepath.Join(b.TempDir(), "utmp")}})
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
