package core

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
)

// BenchmarkLineLayout200 lays out a line of 200 waiting requests of three
// users (most for GPU 0, some for GPU 1 or any GPU) behind full GPUs: what
// a waiter does to learn its ETA, and what placement does inside its write
// transaction. The baseline, in the same loop, is reading the line alone.
func BenchmarkLineLayout200(b *testing.B) {
	path := filepath.Join(b.TempDir(), "chronos.db")
	r := clientAt(path, nil, coretest.Root)
	for dev := range 2 {
		for range 4 {
			if _, err := r.Create(Request{Device: dev, Memory: human.Fraction(0.25), Duration: time.Hour}); err != nil {
				b.Fatal(err)
			}
		}
	}
	users := []domain.Identity{coretest.Alice, coretest.Bob, {UID: 1003, User: "carol"}}
	for i := range 200 {
		dev := 0
		switch i % 10 {
		case 3:
			dev = 1
		case 7:
			dev = domain.AnyDevice
		}
		c := clientAt(path, nil, users[i%3])
		if _, _, err := c.Enqueue(Request{Device: dev, Memory: human.Fraction(0.05 * float64(1+i%6)), Duration: time.Duration(1+i%4) * time.Hour}, admission.WaitOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	var read, layout, place []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		var bk *admission.Books
		if err := r.ledger.View(context.Background(), func(tx *storage.Tx) (err error) { bk, err = r.readLine(tx); return err }); err != nil {
			b.Fatal(err)
		}
		read = append(read, time.Since(t0))
		t0 = time.Now()
		if _, err := bk.PlanRead(); err != nil {
			b.Fatal(err)
		}
		layout = append(layout, time.Since(t0))
		t0 = time.Now()
		if err := r.place(); err != nil {
			b.Fatal(err)
		}
		place = append(place, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(coretest.Ms(coretest.Median(read)), "read-ms")
	b.ReportMetric(coretest.Ms(coretest.Median(layout)), "layout-ms")
	b.ReportMetric(coretest.Ms(coretest.Median(place)), "place-ms")
}

// BenchmarkWaiters200 is the "two hundred waiters at once": 200
// real waiting processes in line for GPU 0 of a ledger file, granted one
// by one as the 200 bookings in their way are released. It measures what
// everyone else sees meanwhile — a probe that books and releases 1% of
// GPU 1 every 100 ms — against the same probe with nobody waiting
// (measured first, in the same run), and each release's transaction,
// which places the line. No write may come near the ledger's 3 s lock
// timeout.
//
// The waiters start 50 ms apart, or CHRONOS_BENCH_WAITERS_APART apart
// (0: all at once, as a script starting hundreds of --wait would).
func BenchmarkWaiters200(b *testing.B) {
	n := waiters200()
	apart := 50 * time.Millisecond
	if v, err := time.ParseDuration(os.Getenv("CHRONOS_BENCH_WAITERS_APART")); err == nil {
		apart = v
	}
	for range b.N {
		db := filepath.Join(b.TempDir(), "chronos.db")
		r := clientAt(db, nil, coretest.Root)
		var holders []uint64
		for range n {
			p, err := r.Create(Request{Device: 0, Memory: human.Fraction(1 / float64(n)), Duration: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			holders = append(holders, p.ID)
		}
		probe := func(stop <-chan struct{}) []time.Duration {
			var out []time.Duration
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return out
				case <-tick.C:
				}
				t0 := time.Now()
				p, err := r.Create(Request{Device: 1, Memory: human.Fraction(0.01), Duration: time.Minute})
				if err == nil {
					_, err = r.Release(p.ID)
				}
				if err != nil {
					b.Error(err)
					return out
				}
				out = append(out, time.Since(t0))
			}
		}
		stop := make(chan struct{})
		go func() { time.Sleep(3 * time.Second); close(stop) }()
		bare := probe(stop)

		started := time.Now()
		waiters := make([]*exec.Cmd, n)
		said := make(chan string, 2*n)
		for i := range waiters {
			cmd := coretest.RoleCmd(b, "wait", db, fmt.Sprint(1/float64(n)))
			out, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			go func() {
				lines := bufio.NewScanner(out)
				for lines.Scan() {
					said <- lines.Text()
				}
			}()
			waiters[i] = cmd
			time.Sleep(apart)
		}
		stop = make(chan struct{})
		during := make(chan []time.Duration)
		go func() { during <- probe(stop) }()
		for i := range n {
			select {
			case line := <-said:
				if !strings.HasPrefix(line, "queued ") {
					b.Fatalf("a waiter said %q", line)
				}
			case <-time.After(time.Minute):
				b.Fatalf("%d of %d waiters joined the line within a minute", i, n)
			}
		}
		joined := time.Since(started)

		var releases []time.Duration
		booked := 0
		for _, id := range holders {
			t0 := time.Now()
			if _, err := r.Release(id); err != nil {
				b.Fatal(err)
			}
			releases = append(releases, time.Since(t0))
		drain:
			for {
				select {
				case <-said:
					booked++
				default:
					break drain
				}
			}
		}
		for ; booked < n; booked++ {
			select {
			case line := <-said:
				if !strings.HasPrefix(line, "booked ") {
					b.Fatalf("a waiter said %q", line)
				}
			case <-time.After(time.Minute):
				b.Fatalf("%d of %d waiters booked a minute after the last release", booked, n)
			}
		}
		all := time.Since(started)
		close(stop)
		busy := <-during
		for _, cmd := range waiters {
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(joined.Seconds(), "join-all-s")
		b.ReportMetric(all.Seconds(), "all-booked-s")
		b.ReportMetric(coretest.Ms(coretest.Median(releases)), "release-p50-ms")
		b.ReportMetric(coretest.Ms(coretest.Percentile(releases, 0.99)), "release-p99-ms")
		b.ReportMetric(coretest.Ms(slices.Max(releases)), "release-max-ms")
		b.ReportMetric(coretest.Ms(coretest.Median(bare)), "probe-alone-p50-ms")
		b.ReportMetric(coretest.Ms(coretest.Median(busy)), "probe-p50-ms")
		b.ReportMetric(coretest.Ms(coretest.Percentile(busy, 0.99)), "probe-p99-ms")
		b.ReportMetric(coretest.Ms(slices.Max(busy)), "probe-max-ms")
	}
}

func waiters200() int {
	if v, err := strconv.Atoi(os.Getenv("CHRONOS_BENCH_WAITERS")); err == nil {
		return v
	}
	return 200
}
