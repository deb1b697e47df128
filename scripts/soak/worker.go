package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/etcd"
)

// workerArgs is what the driver hands a worker process (as JSON in an
// environment variable): the worker is this same binary, started again.
type workerArgs struct {
	Role     string    `json:"role"` // api or contend
	DB       string    `json:"db"`
	Seed     uint64    `json:"seed"`
	Ops      int64     `json:"ops"`   // stop after this many operations
	Until    time.Time `json:"until"` // or at this instant
	Reads    float64   `json:"reads"` // share of reads (api)
	Pause    time.Duration
	Devices  int     `json:"devices"`
	Ahead    float64 `json:"ahead"`  // share of creates booked ahead
	Waits    float64 `json:"waits"`  // share of creates that wait in line
	Gangs    float64 `json:"gangs"`  // share of creates that book several GPUs
	Device   int     `json:"device"` // contend: the one device all hammer
	Out      string  `json:"out"`    // where the worker writes its Tally
	Progress bool    `json:"progress"`
}

const workerEnv = "CHRONOS_SOAK_WORKER"

// waitTimeout is how long a soak worker's request waits in line.
const waitTimeout = 3 * time.Second

// classify turns an operation's error into an outcome; a failure gets its
// message kept.
func classify(err error) (string, string) {
	switch {
	case err == nil:
		return outOK, ""
	case errors.Is(err, domain.ErrOverbooked):
		return outOverbooked, ""
	case errors.Is(err, domain.ErrNotLive):
		return outEnded, ""
	case errors.Is(err, domain.ErrQuota):
		return outQuota, ""
	case errors.Is(err, domain.ErrLeftLine):
		return outLeft, ""
	case errors.Is(err, storage.ErrBusy):
		return outBusy, err.Error()
	default:
		return outFailed, err.Error()
	}
}

// runWorker is a worker process: it uses core.Client directly, in a loop,
// against the shared ledger, and writes its tally when done (or on SIGTERM).
//
//nolint:funlen,gocyclo // one case per kind of work a soak worker does
func runWorker(raw string) int {
	var a workerArgs
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		fmt.Fprintln(os.Stderr, "soak worker:", err)
		return 2
	}
	t := newTally()
	start := selfFigures("worker")
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	rng := rand.New(rand.NewPCG(a.Seed, a.Seed^0x5eed))
	ledger, err := openLedger(a.DB)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak worker:", err)
		return 2
	}
	c := core.NewClient(core.Options{Ledger: ledger, Devices: core.BackendDevices("sim")})
	var mine []uint64 // bookings this worker made that may still be live
	timed := func(kind string, fn func() error) error {
		t0 := time.Now()
		err := fn()
		out, msg := classify(err)
		t.Add(kind, out, time.Since(t0), msg)
		return err
	}
	pick := func() (int, uint64) {
		i := rng.IntN(len(mine))
		return i, mine[i]
	}
	drop := func(i int) { mine[i] = mine[len(mine)-1]; mine = mine[:len(mine)-1] }
	lastProgress := time.Now()
	var done int64
loop:
	for ; done < a.Ops && time.Now().Before(a.Until); done++ {
		select {
		case <-stop:
			break loop
		default:
		}
		if a.Progress && time.Since(lastProgress) > 2*time.Second {
			fmt.Printf("progress %d\n", done)
			lastProgress = time.Now()
		}
		if a.Role == "contend" {
			// Sixteen of these on one device: every create races for it.
			var p *core.Partition
			err := timed("contend.create", func() error {
				var err error
				p, err = c.Create(core.Request{Device: a.Device, Memory: human.Fraction(float64(1+rng.IntN(10)) / 100), Duration: time.Duration(1+rng.IntN(2)) * time.Second})
				return err
			})
			if err == nil && rng.IntN(2) == 0 {
				done++
				_ = timed("contend.release", func() error { _, err := c.Release(p.ID); return err })
			}
			continue
		}
		r := rng.Float64()
		switch {
		case r < a.Reads*0.8:
			_ = timed("api.list", func() error { _, err := c.List(false); return err })
		case r < a.Reads*0.9:
			_ = timed("api.available", func() error { _, err := c.Available(rng.IntN(a.Devices)); return err })
		case r < a.Reads:
			id := uint64(1)
			if len(mine) > 0 {
				_, id = pick()
			}
			_ = timed("api.get", func() error {
				_, err := c.Get(id)
				if errors.Is(err, domain.ErrNoPartition) {
					return nil // nothing booked yet
				}
				return err
			})
		case r < a.Reads+(1-a.Reads)*0.5 || len(mine) == 0:
			share := float64(1+rng.IntN(30)) / 100
			req := core.Request{Device: rng.IntN(a.Devices), Memory: human.Fraction(share), Duration: time.Duration(1+rng.IntN(5)) * time.Second}
			kind, ahead, wait := "api.create", "api.ahead", "api.wait"
			gang := a.Devices > 1 && rng.Float64() < a.Gangs
			if gang {
				g := pickGang(rng, a.Devices)
				req.Device, req.Devices, req.Count = g.Device, g.Devices, g.Count
				kind, ahead, wait = "api.gang", "api.gang-ahead", "api.gang-wait"
			}
			switch x := rng.Float64(); {
			case x < a.Ahead:
				// A booking ahead of time.
				kind, req.Start = ahead, time.Now().Add(time.Duration(500+rng.IntN(5000))*time.Millisecond)
			case x < a.Ahead+a.Waits:
				// Wait in line for up to a few seconds (any GPU, at times).
				kind = wait
				if !gang && rng.IntN(4) == 0 {
					req.Device = domain.AnyDevice
				}
				if gang {
					// A bigger share, so that gangs often wait in line,
					// up to what the soak's user-gpus=1.5 lets one user hold.
					hi := max(21, 120/max(len(req.Devices), req.Count))
					req.Memory = human.Fraction(float64(20+rng.IntN(hi-20)) / 100)
				}
			}
			var p *core.Partition
			err := timed(kind, func() error {
				var err error
				if kind != wait {
					p, err = c.Create(req)
					return err
				}
				var entry *admission.QueueEntry
				if p, entry, err = c.Enqueue(req, admission.WaitOptions{Timeout: waitTimeout}); err != nil || p != nil {
					return err
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
				defer cancel()
				p, err = c.Wait(ctx, entry.ID, nil)
				return err
			})
			if err == nil {
				mine = append(mine, p.ID)
				// All the GPUs asked, or it is a gang granted in part.
				asked := domain.Request{Device: req.Device, Devices: req.Devices, Count: req.Count}
				if flaw := grantFlaw(asked, p.Partition); flaw != "" {
					t.Add(kind+"-whole", outFailed, 0, flaw)
				}
			}
		case r < a.Reads+(1-a.Reads)*0.7:
			i, id := pick()
			err := timed("api.extend", func() error { _, err := c.Extend(id, time.Duration(1+rng.IntN(3))*time.Second); return err })
			if errors.Is(err, domain.ErrNotLive) {
				drop(i)
			}
		default:
			i, id := pick()
			_ = timed("api.release", func() error { _, err := c.Release(id); return err })
			drop(i)
		}
		if a.Pause > 0 {
			time.Sleep(time.Duration(rng.Int64N(int64(a.Pause))))
		}
	}
	end := selfFigures("worker")
	start.EndFDs, start.EndRSSKiB, start.EndThreads, start.EndGoroutines = end.FDs, end.RSSKiB, end.Threads, end.Goroutines
	t.Procs = append(t.Procs, start)
	data, _ := json.Marshal(t)
	if err := os.WriteFile(a.Out, data, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "soak worker:", err)
		return 1
	}
	return 0
}

// ProcFigures are one long-lived process's resources at the start and the
// end of the soak.
type ProcFigures struct {
	Name                          string `json:"name"`
	PID                           int    `json:"pid"`
	FDs, RSSKiB, Threads          int
	Goroutines                    int `json:"goroutines,omitempty"`
	MidFDs, MidRSSKiB, MidThreads int
	EndFDs, EndRSSKiB             int
	EndThreads, EndGoroutines     int
	PeakRSSKiB, PeakThreads       int
	Gone                          bool `json:"gone,omitempty"` // exited before the end
}

func selfFigures(name string) ProcFigures {
	f := procFigures(name, os.Getpid())
	f.Goroutines = runtime.NumGoroutine()
	return f
}

// procFigures reads a process's open descriptors, resident memory and
// threads from /proc.
func procFigures(name string, pid int) ProcFigures {
	f := ProcFigures{Name: name, PID: pid, FDs: -1}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		f.FDs = len(ents)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		f.Gone = true
		return f
	}
	for _, line := range splitLines(string(data)) {
		var n int
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &n); err == nil {
			f.RSSKiB = n
		}
		if _, err := fmt.Sscanf(line, "Threads: %d", &n); err == nil {
			f.Threads = n
		}
	}
	return f
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// openLedger opens the ledger the soak runs on, by its file path or etcd
// URL, as chronos's command layer picks the engine for a --store.
func openLedger(spec string) (storage.Store, error) {
	if !etcd.IsURL(spec) {
		return bolt.New(spec), nil
	}
	cfg, err := etcd.ParseURL(spec)
	if err != nil {
		return nil, err
	}
	return etcd.Open(cfg)
}
