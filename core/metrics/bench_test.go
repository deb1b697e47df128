package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/metrics"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// clock is a settable clock shared by the simulated GPUs and the client.
// benchLedger is 8 simulated GPUs and a ledger with 100 live bookings on
// them, and, with history, 1,000 ended ones with their usage.
func benchLedger(b *testing.B, now *clock.Fake, history bool) (*gpu.Sim, string) {
	b.Helper()
	sim := gpu.NewSim(gpu.SimOptions{Count: 8, Now: now.Now})
	path := filepath.Join(b.TempDir(), "chronos.db")
	who := domain.Identity{UID: 1001, User: "alice"}
	c := core.NewClient(core.Options{Ledger: bolt.New(path), As: &who, Clock: now,
		Devices: func() (core.Listing, error) {
			d, err := sim.Devices()
			return core.Listing{Backend: sim.Name(), Devices: d}, err
		}})
	if history {
		if err := c.Ledger().Update(context.Background(), func(tx *storage.Tx) error {
			for i := range 1000 {
				start := now.Now().Add(-time.Duration(i+2) * time.Hour)
				p := domain.Partition{Device: i % 8, SharePPM: 250_000, UID: 1001 + i%10, User: "user" + string(rune('a'+i%10)),
					Created: start, Expires: start.Add(time.Hour), Ended: start.Add(time.Hour), State: domain.Expired}
				if err := tx.PutPartition(&p); err != nil {
					return err
				}
				if err := tx.PutBookingUsage(domain.BookingUsage{Partition: p.ID, Through: p.Ended, GPUTime: 20 * time.Minute, Idle: 10 * time.Minute}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 100 {
		if _, err := c.Create(core.Request{Device: i % 8, Memory: human.Fraction(0.01), Duration: 4 * time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	return sim, path
}

// BenchmarkScrape is one scrape of /metrics over loopback HTTP, with dcgm's
// names too, from an exporter over 8 simulated GPUs with their processes,
// 100 live bookings and (history=1000) a thousand ended ones; next to it,
// in the same loop, the baseline: reading the live bookings as `chronos
// list` does. It reports both in µs and their ratio.
func BenchmarkScrape(b *testing.B) {
	for _, history := range []bool{false, true} {
		name := "history=0"
		if history {
			name = "history=1000"
		}
		b.Run(name, func(b *testing.B) {
			now := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
			sim, path := benchLedger(b, now, history)
			ex := metrics.New(metrics.Options{Compat: metrics.CompatDCGM})
			c := core.NewClient(core.Options{Ledger: ex.Timed(bolt.New(path)), Clock: now})
			s, err := sim.Sample()
			if err != nil {
				b.Fatal(err)
			}
			parts, err := c.Recent(0)
			if err != nil {
				b.Fatal(err)
			}
			raw := make([]domain.Partition, len(parts))
			for i, p := range parts {
				raw[i] = p.Partition
			}
			ex.Sampled(s, admission.Attribute(s, raw, now.Now()))
			srv := httptest.NewServer(ex.Handler(c))
			defer srv.Close()
			var scrape, list time.Duration
			size := 0
			for b.Loop() {
				t0 := time.Now()
				size = get(b, srv.URL)
				t1 := time.Now()
				if _, err := c.List(false); err != nil {
					b.Fatal(err)
				}
				scrape, list = scrape+t1.Sub(t0), list+time.Since(t1)
			}
			n := float64(b.N)
			b.ReportMetric(float64(scrape.Microseconds())/n, "scrape-µs")
			b.ReportMetric(float64(list.Microseconds())/n, "list-µs")
			b.ReportMetric(float64(scrape)/float64(list), "scrape/list")
			b.ReportMetric(float64(size)/1024, "KiB")
		})
	}
}

// BenchmarkMonitorWithMetrics runs a monitor through one simulated hour, a
// reading a second, over 100 bookings on 8 simulated GPUs, without
// metrics and with them (the exporter observing every pass, and scraped
// over HTTP every 15 s as Prometheus does by default). One op is the hour;
// it reports the CPU it took in ms, which divided by 36,000 is the share of
// one core a real monitor would use.
func BenchmarkMonitorWithMetrics(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "metrics=off"
		if on {
			name = "metrics=on"
		}
		b.Run(name, func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				now := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
				sim, path := benchLedger(b, now, false)
				pol := policy.Default()
				pol.Unbooked = policy.ActOff
				who := domain.Identity{UID: 1001, User: "alice"}
				opts := monitor.Options{Backend: sim, Policy: &pol, Notify: monitor.NotifyOptions{Utmp: filepath.Join(b.TempDir(), "utmp")}}
				var ex *metrics.Exporter
				var store storage.Store = bolt.New(path)
				if on {
					ex = metrics.New(metrics.Options{Compat: metrics.CompatDCGM})
					store, opts.Observer = ex.Timed(store), ex
				}
				c := core.NewClient(core.Options{Ledger: store, As: &who, Clock: now})
				m := monitor.New(c, opts)
				var srv *httptest.Server
				if on {
					srv = httptest.NewServer(ex.Handler(c))
				}
				b.StartTimer()
				cpu0 := cpuTime()
				for i := range 3600 {
					now.Advance(time.Second)
					if _, err := m.Tick(); err != nil {
						b.Fatal(err)
					}
					if on && i%15 == 0 {
						get(b, srv.URL)
					}
				}
				cpu += cpuTime() - cpu0
				b.StopTimer()
				if srv != nil {
					srv.Close()
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/hour")
		})
	}
}

// get scrapes url as Prometheus does and returns how many bytes came.
func get(b *testing.B, url string) int {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatal(resp.Status, err)
	}
	return len(body)
}

// cpuTime is the CPU this process has used, user and kernel: the HTTP
// server's and client's too, since both run here.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
