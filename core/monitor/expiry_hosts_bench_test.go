package monitor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// BenchmarkExpiryManyHosts is issue 24's soak: a 3-member etcd cluster on
// loopback, 3 hosts each with its own monitor and 8 writers (each on its
// own connection) that create and release bookings in a loop, for
// $CHRONOS_SOAK_FOR (1m unless set; the figure is 10m). Meanwhile
// each host books a short booking (2-6 s) with a real process in it every
// 400 ms, on a GPU of its own simulated two. Reported: how late each
// expiry was recorded (the monitor's commit) and how late its process got
// SIGTERM, p50, p99 and max; bookings not recorded or signalled within
// 20 s of the end count at that lag; and what the writers got done.
//
//	CHRONOS_SOAK_FOR=10m go test ./core/monitor -run '^$' -bench ExpiryManyHosts -benchtime 1x -timeout 30m
func BenchmarkExpiryManyHosts(b *testing.B) {
	const (
		hosts, writers = 3, 8
		every          = 400 * time.Millisecond
		after          = 20 * time.Second
	)
	soak := time.Minute
	if v := os.Getenv("CHRONOS_SOAK_FOR"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("CHRONOS_SOAK_FOR=%q: %v", v, err)
		}
		soak = d
	}
	for range b.N {
		open := storetest.Etcd(b, etcdtest.Start(b, 3))
		me := proc.CurrentIdentity()
		rec := &recordingSignaller{sent: map[int]time.Time{}}
		var mu sync.Mutex
		flipped := map[uint64]time.Time{}
		expires := map[uint64]time.Time{}
		pidOf := map[uint64]int{}
		errs := map[string][]string{} // what each host's monitor reported failing
		began := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		stop := make(chan struct{})
		var wg, monitors sync.WaitGroup
		var wr writerTally
		for h := range hosts {
			host := fmt.Sprintf("gpu%c", 'A'+h)
			sim := gpu.NewSim(gpu.SimOptions{Count: 2})
			client := func() *core.Client {
				return core.NewClient(core.Options{Ledger: open(), As: &me, Host: host, Devices: simDevices(sim)})
			}
			m := New(client(), Options{Backend: sim, Signaller: rec, Name: host, OnAct: func(a Act) {
				if a.Kind == domain.EventError {
					mu.Lock()
					errs[host] = append(errs[host], fmt.Sprintf("%s: %s", a.Time.Sub(began), a.Detail))
					mu.Unlock()
				}
				if a.Kind == domain.EventExpired {
					mu.Lock()
					flipped[a.Partition] = a.Time
					mu.Unlock()
				}
			}})
			monitors.Go(func() { _ = m.Run(ctx) })
			for range writers {
				w := client()
				wg.Go(func() { wr.run(stop, w) })
			}
			booker := client()
			wg.Go(func() {
				tick := time.NewTicker(every)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					d := 2*time.Second + rand.N(4*time.Second)
					p, err := booker.Create(core.Request{Device: 1, Memory: human.Fraction(0.05), Duration: d})
					if err != nil {
						continue // the writers count what the load cost
					}
					cmd := exec.Command("sleep", "600")
					cmd.Env = []string{procfs.PartitionEnv + "=" + strconv.FormatUint(p.ID, 10)}
					if err := cmd.Start(); err != nil {
						b.Error(err)
						return
					}
					go func() { _ = cmd.Wait() }()
					b.Cleanup(func() { _ = cmd.Process.Kill() })
					sim.Attach(1, cmd.Process.Pid, 1<<20)
					mu.Lock()
					expires[p.ID], pidOf[p.ID] = p.Expires, cmd.Process.Pid
					mu.Unlock()
				}
			})
		}
		time.Sleep(soak)
		close(stop)
		wg.Wait()
		loadFor := time.Since(began)
		end := time.Now().Add(after)
		for time.Now().Before(end) {
			mu.Lock()
			// Every booking made, not just as many: a create whose
			// answer was lost may have booked one the bookers never knew.
			all := true
			for id := range expires {
				if _, ok := flipped[id]; !ok {
					all = false
					break
				}
			}
			mu.Unlock()
			if all {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		late := explainLate(b, core.NewClient(core.Options{Ledger: open(), As: &me}), expires, flipped, began)
		if explainMissed(b, core.NewClient(core.Options{Ledger: open(), As: &me}), expires, flipped, began) || late {
			for host, e := range errs {
				b.Logf("%s's monitor's errors, the first and last ten of %d:\n  %s\n  …\n  %s", host, len(e),
					strings.Join(e[:min(10, len(e))], "\n  "), strings.Join(e[max(0, len(e)-10):], "\n  "))
			}
		}
		cancel()
		monitors.Wait()

		b.ReportMetric(float64(len(expires)), "bookings")
		reportExpiries(b, expires, flipped, rec, pidOf, end)
		wr.report(b, loadFor)
	}
}

// writerTally counts what a benchmark's writers got done.
type writerTally struct{ ok, busy, failed, slowest atomic.Int64 }

// run creates and releases a small booking on GPU 0 in a loop until stop,
// counting what succeeded, what was refused busy, what failed otherwise,
// and the slowest create+release.
func (wr *writerTally) run(stop <-chan struct{}, w *core.Client) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		t0 := time.Now()
		p, err := w.Create(core.Request{Device: 0, Memory: human.Fraction(0.01), Duration: time.Minute})
		if err == nil {
			_, err = w.Release(p.ID)
		}
		took := int64(time.Since(t0))
		for old := wr.slowest.Load(); took > old && !wr.slowest.CompareAndSwap(old, took); old = wr.slowest.Load() {
		}
		switch {
		case err == nil:
			wr.ok.Add(1)
		case errors.Is(err, storage.ErrBusy):
			wr.busy.Add(1)
		default:
			wr.failed.Add(1)
		}
	}
}

// report reports the writers' pace over loadFor and what they lost.
func (wr *writerTally) report(b *testing.B, loadFor time.Duration) {
	b.ReportMetric(float64(wr.ok.Load())/loadFor.Seconds(), "writer-ops/s")
	b.ReportMetric(float64(wr.busy.Load()), "writer-busy")
	b.ReportMetric(float64(wr.failed.Load()), "writer-failed")
	b.ReportMetric(coretest.Ms(time.Duration(wr.slowest.Load())), "writer-slowest-ms")
}

// reportExpiries reports how late each booking's expiry was recorded
// (flipped) and its process signalled (rec, by pidOf), p50, p99 and max,
// past its deadline (expires); one never recorded or signalled counts at
// end.
func reportExpiries(b *testing.B, expires, flipped map[uint64]time.Time, rec *recordingSignaller, pidOf map[uint64]int, end time.Time) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var flip, term []time.Duration
	unrecorded, unsignalled := 0, 0
	for id, deadline := range expires {
		f, recorded := flipped[id]
		if !recorded {
			unrecorded++
			f = end
		}
		s, sent := rec.sent[pidOf[id]]
		if !sent {
			unsignalled++
			s = end
		}
		flip = append(flip, f.Sub(deadline))
		term = append(term, s.Sub(deadline))
	}
	b.ReportMetric(coretest.Ms(coretest.Median(flip)), "record-p50-ms")
	b.ReportMetric(coretest.Ms(coretest.Percentile(flip, 0.99)), "record-p99-ms")
	b.ReportMetric(coretest.Ms(coretest.Percentile(flip, 1)), "record-max-ms")
	b.ReportMetric(float64(unrecorded), "unrecorded")
	b.ReportMetric(coretest.Ms(coretest.Median(term)), "sigterm-p50-ms")
	b.ReportMetric(coretest.Ms(coretest.Percentile(term, 0.99)), "sigterm-p99-ms")
	b.ReportMetric(coretest.Ms(coretest.Percentile(term, 1)), "sigterm-max-ms")
	b.ReportMetric(float64(unsignalled), "unsignalled")
}

// explainMissed says, of each booking no monitor was seen to expire, what
// the ledger holds of it: its state and its events.
func explainMissed(b *testing.B, c *core.Client, expires, flipped map[uint64]time.Time, began time.Time) (missed bool) {
	for id, deadline := range expires {
		if _, ok := flipped[id]; ok {
			continue
		}
		missed = true
		what := ""
		p, err := c.Get(id)
		if err == nil {
			what = fmt.Sprintf("host %s, %s, expires %s", p.Host, p.State, p.Expires.Sub(began))
		}
		evs, _ := c.FindEvents(core.EventFilter{Booking: id}, 0)
		for _, e := range evs {
			what += fmt.Sprintf("; %s at %s by %s: %s", e.Kind, e.Time.Sub(began), e.User, e.Detail)
		}
		b.Logf("booking %d (deadline %s into the soak) not seen expired: %s %v", id, deadline.Sub(began), what, err)
	}
	return missed
}

// explainLate says, of each booking whose expiry was recorded more than 2 s
// after its deadline, which host's it was and when.
func explainLate(b *testing.B, c *core.Client, expires, flipped map[uint64]time.Time, began time.Time) (any bool) {
	for id, deadline := range expires {
		f, ok := flipped[id]
		if !ok || f.Sub(deadline) <= 2*time.Second {
			continue
		}
		any = true
		host := "?"
		if p, err := c.Get(id); err == nil {
			host = p.Host
		}
		b.Logf("booking %d of %s: deadline %s into the soak, recorded %s late", id, host, deadline.Sub(began), f.Sub(deadline))
	}
	return any
}
