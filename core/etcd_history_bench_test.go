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

// BenchmarkEtcdHistory times a create, its release, a read of the newest
// event, of every booking and of the live bucket on a one-member etcd of its own: fresh, after b.N bookings
// made and released (each leaves deleted keys etcd keeps until it
// compacts), and once compacted, as the monitors do (ForgetHistory).
// -benchtime 10000x is a busy day's churn.
func BenchmarkEtcdHistory(b *testing.B) {
	s := storetest.Etcd(b, etcdtest.Start(b, 1))().(*etcd.Store)
	c := clientOn(s, nil, coretest.Alice)
	var creates, releases []time.Duration
	book := func() {
		t0 := time.Now()
		p, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.01), Duration: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := c.Release(p.ID); err != nil {
			b.Fatal(err)
		}
		creates, releases = append(creates, t1.Sub(t0)), append(releases, time.Since(t1))
	}
	measure := func(name string) {
		var reads, newest, all []time.Duration
		creates, releases = nil, nil
		for i := range 100 {
			book()
			if i < 10 { // every booking ever made: a report's read
				t0 := time.Now()
				if err := s.View(context.Background(), func(tx *storage.Tx) error { _, err := tx.Partitions(); return err }); err != nil {
					b.Fatal(err)
				}
				all = append(all, time.Since(t0))
			}
			t0 := time.Now()
			// What every app asks at every refresh: the newest event.
			if err := s.View(context.Background(), func(tx *storage.Tx) error { tx.LastEvent(); return nil }); err != nil {
				b.Fatal(err)
			}
			newest = append(newest, time.Since(t0))
			t0 = time.Now()
			if _, err := s.Client().Get(context.Background(), s.Prefix()+"/"+string(storage.BucketLive)+"/", clientv3.WithPrefix()); err != nil {
				b.Fatal(err)
			}
			reads = append(reads, time.Since(t0))
		}
		b.ReportMetric(coretest.Ms(coretest.Median(creates)), name+"-create-ms")
		b.ReportMetric(coretest.Ms(coretest.Median(releases)), name+"-release-ms")
		b.ReportMetric(coretest.Ms(coretest.Median(reads)), name+"-live-read-ms")
		b.ReportMetric(coretest.Ms(coretest.Median(newest)), name+"-newest-event-ms")
		b.ReportMetric(coretest.Ms(coretest.Median(all)), name+"-all-bookings-ms")
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
