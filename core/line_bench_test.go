package core

import (
	"bufio"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/human"
)

// BenchmarkReleaseToWaiter measures how soon a waiting process learns it
// is booked: from the moment a release begins (its transaction grants the
// room to the waiter) to the waiter's "booked" on its stdout, the waiter
// being another process that waits on ledger changes. The baseline,
// measured in the same loop, is the release alone with nobody waiting.
func BenchmarkReleaseToWaiter(b *testing.B) {
	db := filepath.Join(b.TempDir(), "chronos.db")
	c := clientAt(db, nil, coretest.Alice)
	if _, err := c.Create(Request{Device: 1, Memory: human.Fraction(0.01), Duration: time.Hour}); err != nil {
		b.Fatal(err) // the inventory, cached before the waiter starts
	}
	cmd := coretest.RoleCmd(b, "pingwait", db, "")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	said := bufio.NewScanner(stdout)
	expect := func(word string) {
		if !said.Scan() || strings.TrimSpace(said.Text()) != word {
			b.Fatalf("the waiter said %q, not %q", said.Text(), word)
		}
	}
	var toWaiter, bare []time.Duration
	b.ResetTimer()
	for range b.N {
		// The baseline: a release with nobody waiting.
		p, err := c.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if _, err := c.Release(p.ID); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))

		hold, err := c.Create(Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintln(stdin, "go")
		expect("queued")
		t0 = time.Now()
		if _, err := c.Release(hold.ID); err != nil {
			b.Fatal(err)
		}
		expect("booked")
		toWaiter = append(toWaiter, time.Since(t0))
		expect("released")
	}
	b.StopTimer()
	b.ReportMetric(coretest.Ms(coretest.Median(toWaiter)), "waiter-p50-ms")
	b.ReportMetric(coretest.Ms(coretest.Percentile(toWaiter, 0.99)), "waiter-p99-ms")
	b.ReportMetric(coretest.Ms(coretest.Median(bare)), "release-p50-ms")
	b.ReportMetric(float64(coretest.Median(toWaiter))/float64(coretest.Median(bare)), "waiter/release")
}
