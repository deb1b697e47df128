package monitor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// BenchmarkExpiryUnderWriters measures how late expiries are recorded on a
// local one-member etcd while writers keep the ledger busy: 24 writers,
// each with its own connection (as 3 hosts × 8 processes would have),
// create and release short bookings in a loop, while one monitor expires
// 100 bookings whose deadlines fall 150 ms apart, each with a real process
// in it (shown on a simulated GPU). Reported: how late each expiry was
// recorded (the monitor's commit) and how late its process got SIGTERM, p50,
// p99 and max; bookings never recorded within 20 s of the last deadline
// count at that lag. Writers' throughput, their busy errors and their
// slowest operation show what the load was and what it cost them.
//
//	go test ./core -run '^$' -bench ExpiryUnderWriters -benchtime 1x
func BenchmarkExpiryUnderWriters(b *testing.B) {
	const (
		writers = 24
		n       = 100
		apart   = 150 * time.Millisecond
		after   = 20 * time.Second // how long past the last deadline expiries are awaited
	)
	for range b.N {
		open := storetest.Etcd(b, etcdtest.Start(b, 1))
		sim := gpu.NewSim(gpu.SimOptions{})
		me := proc.CurrentIdentity()
		client := func() *core.Client {
			return core.NewClient(core.Options{Ledger: open(), As: &me, Devices: simDevices(sim)})
		}
		c := client()
		first := time.Now().Add(10 * time.Second) // setup, then the writers warm up
		expires, pidOf := bookWithProcesses(b, c, sim, n, first, apart)
		if time.Now().After(first.Add(-time.Second)) {
			b.Fatal("setup took too long for the first deadline")
		}

		// The writers, from now until the last deadline and a second more.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var wr writerTally
		for range writers {
			w := client()
			wg.Go(func() { wr.run(stop, w) })
		}

		var mu sync.Mutex
		flipped := map[uint64]time.Time{}
		rec := &recordingSignaller{sent: map[int]time.Time{}}
		m := New(client(), Options{Backend: sim, Signaller: rec, OnAct: func(a Act) {
			if a.Kind == domain.EventExpired {
				mu.Lock()
				flipped[a.Partition] = a.Time
				mu.Unlock()
			}
		}})
		last := first.Add((n - 1) * apart)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = m.Run(ctx); close(done) }()
		loadStart := time.Now()
		time.Sleep(time.Until(last.Add(time.Second)))
		close(stop)
		wg.Wait()
		loadFor := time.Since(loadStart)
		for time.Now().Before(last.Add(after)) {
			mu.Lock()
			all := len(flipped) == n
			mu.Unlock()
			if all {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		<-done

		mu.Lock()
		reportExpiries(b, expires, flipped, rec, pidOf, last.Add(after))
		mu.Unlock()
		wr.report(b, loadFor)
	}
}
