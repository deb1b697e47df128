package monitor

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// recordingSignaller sends real signals and notes when each SIGTERM was
// handed to the kernel.
type recordingSignaller struct {
	mu   sync.Mutex
	sent map[int]time.Time
}

func (r *recordingSignaller) Signal(pid int, start uint64, sig syscall.Signal) error {
	err := proc.PidfdSignaller{}.Signal(pid, start, sig)
	if err == nil && sig == syscall.SIGTERM {
		r.mu.Lock()
		r.sent[pid] = time.Now()
		r.mu.Unlock()
	}
	return err
}

// BenchmarkExpiryAccuracy books 200 short partitions with deadlines 20 ms
// apart, each with a real process in it (shown on a simulated GPU), runs one
// monitor, and measures how late each booking was flipped to expired and
// how late its process got SIGTERM. Reported: p50 and p99 of both, in ms.
func BenchmarkExpiryAccuracy(b *testing.B) {
	const n = 200
	for range b.N {
		sim := gpu.NewSim(gpu.SimOptions{})
		path := filepath.Join(b.TempDir(), "chronos.db")
		c := core.NewClient(core.Options{Ledger: bolt.New(path), Devices: func() (core.Listing, error) {
			devs, err := sim.Devices()
			return core.Listing{Backend: sim.Name(), Devices: devs}, err
		}})
		first := time.Now().Add(3 * time.Second)
		expires, pidOf := bookWithProcesses(b, c, sim, n, first, 20*time.Millisecond)
		if time.Now().After(first.Add(-500 * time.Millisecond)) {
			b.Fatal("setup took too long for the first deadline")
		}
		var mu sync.Mutex
		flipped := map[uint64]time.Time{}
		rec := &recordingSignaller{sent: map[int]time.Time{}}
		m := New(c, Options{Backend: sim, Signaller: rec, OnAct: func(a Act) {
			if a.Kind == "expired" {
				mu.Lock()
				flipped[a.Partition] = a.Time
				mu.Unlock()
			}
		}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Until(first)+n*20*time.Millisecond+3*time.Second)
		m.Run(ctx)
		cancel()

		var flip, term []time.Duration
		for id, deadline := range expires {
			f, ok := flipped[id]
			if !ok {
				b.Fatalf("booking %d never expired", id)
			}
			s, ok := rec.sent[pidOf[id]]
			if !ok {
				b.Fatalf("booking %d's process never got SIGTERM", id)
			}
			flip = append(flip, f.Sub(deadline))
			term = append(term, s.Sub(deadline))
		}
		b.ReportMetric(coretest.Ms(coretest.Median(flip)), "flip-p50-ms")
		b.ReportMetric(coretest.Ms(coretest.Percentile(flip, 0.99)), "flip-p99-ms")
		b.ReportMetric(coretest.Ms(coretest.Median(term)), "sigterm-p50-ms")
		b.ReportMetric(coretest.Ms(coretest.Percentile(term, 0.99)), "sigterm-p99-ms")
		b.ReportMetric(coretest.Ms(coretest.Percentile(term, 1)), "sigterm-max-ms")
	}
}

// bookWithProcesses makes n bookings whose deadlines come apart from first
// on, each with a real process (sleep) attributed to it on sim's idle GPU,
// killed when the benchmark ends. It returns each booking's deadline and
// its process's pid.
func bookWithProcesses(b *testing.B, c *core.Client, sim *gpu.Sim, n int, first time.Time, apart time.Duration) (expires map[uint64]time.Time, pidOf map[uint64]int) {
	b.Helper()
	expires, pidOf = map[uint64]time.Time{}, map[uint64]int{}
	for i := range n {
		deadline := first.Add(time.Duration(i) * apart)
		p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Bytes(1 << 20), Duration: time.Until(deadline)})
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("sleep", "600")
		cmd.Env = []string{procfs.PartitionEnv + "=" + strconv.FormatUint(p.ID, 10)}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		go func() { _ = cmd.Wait() }() // reaped as soon as a signal ends it
		b.Cleanup(func() { _ = cmd.Process.Kill() })
		sim.Attach(coretest.IdleGPU, cmd.Process.Pid, 1<<20)
		expires[p.ID], pidOf[p.ID] = p.Expires, cmd.Process.Pid
	}
	return expires, pidOf
}
