package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// engines are the stores the benchmarks compare, started fresh in one run:
// the ledger file (the baseline), a local one-member etcd and a local
// three-member etcd cluster, each on this machine's disk.
func engines(b *testing.B) []struct {
	name  string
	fresh func(testing.TB) storage.Store // a new, empty ledger
} {
	one, three := etcdtest.Start(b, 1), etcdtest.Start(b, 3)
	return []struct {
		name  string
		fresh func(testing.TB) storage.Store
	}{
		{"bbolt", func(b testing.TB) storage.Store { return storetest.Bolt(b)() }},
		{"etcd-1", func(b testing.TB) storage.Store { return storetest.Etcd(b, one)() }},
		{"etcd-3", func(b testing.TB) storage.Store { return storetest.Etcd(b, three)() }},
	}
}

// BenchmarkStores times create, release and list through the public API on
// each engine in the same run (-benchtime Nx sets the iterations): with 20
// other live bookings present for create and release, and list reading 100
// live bookings, as a busy lab's would. On etcd a bare one-key Txn put is the
// floor.
func BenchmarkStores(b *testing.B) {
	for _, e := range engines(b) {
		b.Run(e.name, func(b *testing.B) {
			s := e.fresh(b)
			c := clientOn(s, nil, coretest.Alice)
			for range 20 {
				if _, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.01), Duration: time.Hour}); err != nil {
					b.Fatal(err)
				}
			}
			bare := func() {}
			if es, ok := s.(*etcd.Store); ok {
				k := es.Prefix() + "/bare"
				value := strings.Repeat("x", 300)
				bare = func() {
					if _, err := es.Client().Txn(context.Background()).Then(clientv3.OpPut(k, value)).Commit(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ResetTimer()
			bareT, createT, releaseT := timeCreateRelease(b, c, bare)
			b.StopTimer()
			for range 80 {
				if _, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.001), Duration: time.Hour}); err != nil {
					b.Fatal(err)
				}
			}
			var listT []time.Duration
			for range max(20, b.N/4) {
				t0 := time.Now()
				parts, err := c.List(false)
				if err != nil || len(parts) != 100 {
					b.Fatal(err, len(parts))
				}
				listT = append(listT, time.Since(t0))
			}
			if _, ok := s.(*etcd.Store); ok {
				b.ReportMetric(coretest.Ms(coretest.Median(bareT)), "bare-txn-ms")
			}
			b.ReportMetric(coretest.Ms(coretest.Median(createT)), "create-p50-ms")
			b.ReportMetric(coretest.Ms(coretest.Percentile(createT, 0.99)), "create-p99-ms")
			b.ReportMetric(coretest.Ms(coretest.Median(releaseT)), "release-p50-ms")
			b.ReportMetric(coretest.Ms(coretest.Percentile(releaseT, 0.99)), "release-p99-ms")
			b.ReportMetric(coretest.Ms(coretest.Median(listT)), "list100-p50-ms")
			b.ReportMetric(coretest.Ms(coretest.Percentile(listT, 0.99)), "list100-p99-ms")
		})
	}
}

// BenchmarkVisibility times how long a booking made on one host takes to
// show in another host's app: from the start of Create on gpu2 until gpu1,
// woken by the ledger's change notice, has read what its app reads (as
// loadCmd does) and found the booking. On a one-member etcd and a
// three-member cluster, in one run.
func BenchmarkVisibility(b *testing.B) {
	for _, members := range []int{1, 3} {
		b.Run(fmt.Sprintf("etcd-%d", members), func(b *testing.B) {
			visibility(b, storetest.Etcd(b, etcdtest.Start(b, members)))
		})
	}
}

func visibility(b *testing.B, open storetest.Opener) {
	maker := hostClient(open(), "gpu2", coretest.Bob)
	viewer := hostClient(open(), "gpu1", coretest.Alice)
	if _, err := viewer.Available(-1); err != nil { // caches gpu1's inventory, as its app does
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := viewer.Ledger().Changes(ctx, time.Second)
	seen := func(id uint64) bool {
		parts, err := viewer.Recent(0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := viewer.Available(-1); err != nil {
			b.Fatal(err)
		}
		for _, p := range parts {
			if p.ID == id {
				return true
			}
		}
		return false
	}
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		p, err := maker.Create(Request{Device: i % 2, Memory: human.Fraction(0.001), Duration: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		for found := false; !found; {
			select {
			case <-changes:
				found = seen(p.ID)
			case <-time.After(5 * time.Second):
				b.Fatalf("booking %d not seen within 5 s", p.ID)
			}
		}
		took = append(took, time.Since(start))
		if err := p.Release(); err != nil {
			b.Fatal(err)
		}
		<-changes // the release's notice
	}
	b.StopTimer()
	b.ReportMetric(coretest.Ms(coretest.Median(took)), "visible-p50-ms")
	b.ReportMetric(coretest.Ms(coretest.Percentile(took, 0.99)), "visible-p99-ms")
}

var _ storage.Store = (*etcd.Store)(nil)
