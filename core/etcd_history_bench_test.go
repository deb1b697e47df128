package core

import (
	"context"
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

// BenchmarkEtcdHistory times a create (and its release) and a read of the
// live bucket on a one-member etcd of its own: fresh, after b.N bookings
// made and released (each leaves deleted keys etcd keeps until it
// compacts), and once compacted, as the monitors do (ForgetHistory).
// -benchtime 10000x is a busy day's churn.
func BenchmarkEtcdHistory(b *testing.B) {
	s := storetest.Etcd(b, etcdtest.Start(b, 1))().(*etcd.Store)
	c := clientOn(s, nil, coretest.Alice)
	book := func() {
		p, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.01), Duration: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Release(p.ID); err != nil {
			b.Fatal(err)
		}
	}
	measure := func(name string) {
		var creates, reads []time.Duration
		for range 100 {
			t0 := time.Now()
			book()
			creates = append(creates, time.Since(t0))
			t0 = time.Now()
			if _, err := s.Client().Get(context.Background(), s.Prefix()+"/"+string(storage.BucketLive)+"/", clientv3.WithPrefix()); err != nil {
				b.Fatal(err)
			}
			reads = append(reads, time.Since(t0))
		}
		b.ReportMetric(coretest.Ms(coretest.Median(creates)), name+"-create-ms")
		b.ReportMetric(coretest.Ms(coretest.Median(reads)), name+"-live-read-ms")
	}
	b.StopTimer()
	measure("fresh")
	b.StartTimer()
	for range b.N {
		book()
	}
	b.StopTimer()
	measure("churned")
	r, err := s.Client().Get(context.Background(), s.Prefix())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Client().Compact(context.Background(), r.Header.Revision); err != nil {
		b.Fatal(err)
	}
	measure("compacted")
}
