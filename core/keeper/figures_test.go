package keeper

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/human"
)

// TestKeeperFigures measures the keeper in process, for BENCHMARKS.md:
// a create (and its release) through the keeper against the same directly,
// creates+releases a second from 16 clients, and the heap with 200
// waiters. It runs only with KEEPER_FIGURES=1 (real time, on purpose).
func TestKeeperFigures(t *testing.T) {
	if os.Getenv("KEEPER_FIGURES") == "" {
		t.Skip("KEEPER_FIGURES=1 measures the keeper")
	}
	k := startKeeper(t)
	via := NewClient(k.sock, k.root)
	req := core.Request{Device: 0, Memory: human.Bytes(1 << 20), Duration: time.Hour}
	p50 := func(w interface {
		Create(core.Request) (*core.Partition, error)
		Release(uint64) (core.Partition, error)
	}) time.Duration {
		var took []time.Duration
		for range 300 {
			start := clock.Kernel.Now()
			p, err := w.Create(req)
			took = append(took, clock.Kernel.Now().Sub(start))
			require.NoError(t, err)
			_, err = w.Release(p.ID)
			require.NoError(t, err)
		}
		slices.Sort(took)
		return took[len(took)/2]
	}
	direct, keeper := p50(k.root), p50(via)
	fmt.Printf("create p50: direct %s, through the keeper %s (%.2fx)\n", direct, keeper, float64(keeper)/float64(direct))

	const clients, each = 16, 50
	start := clock.Kernel.Now()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			r := req
			r.Device = i % 2
			for range each {
				p, err := via.Create(r)
				require.NoError(t, err)
				_, err = via.Release(p.ID)
				require.NoError(t, err)
			}
		})
	}
	wg.Wait()
	took := clock.Kernel.Now().Sub(start)
	fmt.Printf("16 clients: %d creates+releases in %s: %.0f a second\n", clients*each, took, float64(clients*each)/took.Seconds())

	full, err := k.root.Create(core.Request{Device: 0, Memory: human.Fraction(1), Duration: time.Hour})
	require.NoError(t, err)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	const waiters = 200
	joined := make(chan struct{}, waiters)
	booked := make(chan error, waiters)
	for range waiters {
		go func() {
			_, err := via.BookOrWait(t.Context(), core.Request{Device: 0, Memory: human.Bytes(1 << 20), Duration: time.Hour},
				&admission.WaitOptions{}, func(admission.QueueEntry) { joined <- struct{}{} }, nil)
			booked <- err
		}()
	}
	for range waiters {
		<-joined
	}
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	fmt.Printf("200 waiters in line: heap %.1f MiB more (clients and keeper together), %d goroutines\n",
		float64(during.HeapAlloc-before.HeapAlloc)/(1<<20), runtime.NumGoroutine())
	start = clock.Kernel.Now()
	_, err = k.root.Release(full.ID)
	require.NoError(t, err)
	for range waiters {
		require.NoError(t, <-booked)
	}
	fmt.Printf("200 waiters booked %s after the release\n", clock.Kernel.Now().Sub(start))
}
