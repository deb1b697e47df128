package etcd

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// BenchmarkLineOfWriters is the pace of the writers' line: 16 writers,
// each on a connection of its own, add bookings to one ledger on a
// three-member cluster for a while, against one writer alone in the same
// run. Under contention every commit after the first loser's goes through
// the line, so writes/s there is what 16 people booking at once get.
//
//	go test ./storage/etcd -run '^$' -bench LineOfWriters -benchtime 1x
func BenchmarkLineOfWriters(b *testing.B) {
	c := etcdtest.Start(b, 3)
	const lasting = 10 * time.Second
	pace := func(writers int) (perSecond float64, busy int64) {
		first := openOn(b, c, 5*time.Second)
		var done, failed atomic.Int64
		var wg sync.WaitGroup
		until := time.Now().Add(lasting)
		for range writers {
			s, err := Open(Config{Endpoints: c.Endpoints(), Prefix: first.Prefix(), Timeout: 5 * time.Second})
			require.NoError(b, err)
			defer func() { _ = s.Close() }()
			wg.Go(func() {
				for time.Now().Before(until) {
					if _, err := addBooking(s); err != nil {
						failed.Add(1)
						continue
					}
					done.Add(1)
				}
			})
		}
		wg.Wait()
		return float64(done.Load()) / lasting.Seconds(), failed.Load()
	}
	for range b.N {
		alone, _ := pace(1)
		many, busy := pace(16)
		b.ReportMetric(alone, "alone-writes/s")
		b.ReportMetric(many, "16-writes/s")
		b.ReportMetric(float64(busy), "16-failed")
	}
}
