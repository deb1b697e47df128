package monitor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// BenchmarkContention is soak-etcd's contention phase in one process: 16
// clients, each on a connection of its own, create bookings of 1–2 s on
// one GPU and release half of them, on a three-member cluster, beside 0, 1
// and 3 monitors of the same host, which record every expiry.
//
//	go test ./core/monitor -run '^$' -bench Contention -benchtime 1x
func BenchmarkContention(b *testing.B) {
	cluster := etcdtest.Start(b, 3)
	for _, monitors := range []int{0, 1, 3} {
		b.Run(fmt.Sprintf("monitors-%d", monitors), func(b *testing.B) {
			open := storetest.Etcd(b, cluster)
			sim := gpu.NewSim(gpu.SimOptions{})
			me := proc.CurrentIdentity()
			client := func() *core.Client {
				return core.NewClient(core.Options{Ledger: open(), As: &me, Devices: simDevices(sim)})
			}
			ctx, cancel := context.WithCancel(context.Background())
			var mons sync.WaitGroup
			var actMu sync.Mutex
			acts := map[domain.EventKind]int{}
			for range monitors {
				m := New(client(), Options{Backend: sim, Signaller: &recordingSignaller{sent: map[int]time.Time{}}, OnAct: func(a Act) {
					actMu.Lock()
					acts[a.Kind]++
					actMu.Unlock()
				}})
				mons.Go(func() { _ = m.Run(ctx) })
			}
			const lasting = 10 * time.Second
			for range b.N {
				var answered, busy atomic.Int64
				var mu sync.Mutex
				var lat []time.Duration
				var wg sync.WaitGroup
				until := time.Now().Add(lasting)
				for i := range 16 {
					c := client()
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(uint64(i), 1))
						for time.Now().Before(until) {
							t0 := time.Now()
							p, err := c.Create(core.Request{Device: 0, Memory: human.Fraction(float64(1+rng.IntN(10)) / 100), Duration: time.Duration(1+rng.IntN(2)) * time.Second})
							mu.Lock()
							lat = append(lat, time.Since(t0))
							mu.Unlock()
							switch {
							case err == nil:
								answered.Add(1)
								if rng.IntN(2) == 0 {
									_, _ = c.Release(p.ID)
								}
							case errors.Is(err, domain.ErrOverbooked):
								answered.Add(1)
							case errors.Is(err, storage.ErrBusy):
								busy.Add(1)
							default:
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(answered.Load())/lasting.Seconds(), "creates/s")
				b.ReportMetric(float64(busy.Load()), "busy")
				b.ReportMetric(coretest.Ms(coretest.Median(lat)), "create-p50-ms")
				b.ReportMetric(coretest.Ms(coretest.Percentile(lat, 0.99)), "create-p99-ms")
			}
			cancel()
			mons.Wait()
			b.Logf("acts: %v", acts)
		})
	}
}
