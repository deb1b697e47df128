package core

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

// BenchmarkCreateUnderQuotas books and releases, as BenchmarkLedgerOps
// does, on a ledger with a week of history — 2,000 ended bookings of four
// users — with and without an hours quota in force (which reads what the
// user's ended bookings held in its window) and a user-gpus quota. The
// ratio is to the same create with no quota, measured in the same loop.
func BenchmarkCreateUnderQuotas(b *testing.B) {
	path := filepath.Join(b.TempDir(), "chronos.db")
	at := time.Now().Add(-7 * 24 * time.Hour)
	clock := clock.NewFake(at)
	users := []domain.Identity{coretest.Alice, coretest.Bob, coretest.Root, {UID: 1003, User: "carol"}}
	for i := range 2000 {
		c := clientAt(path, clock, users[i%len(users)])
		p, err := c.Create(Request{Device: i % 2, Memory: human.Fraction(0.1), Duration: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		clock.Advance(time.Duration(7*24*time.Hour) / 2000)
		if _, err := c.Release(p.ID); err != nil {
			b.Fatal(err)
		}
	}
	admin := clientAt(path, nil, coretest.Root)
	create := func(c *Client) time.Duration {
		t0 := time.Now()
		p, err := c.Create(Request{Device: 0, Memory: human.Fraction(0.01), Duration: time.Hour})
		took := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Release(p.ID); err != nil {
			b.Fatal(err)
		}
		return took
	}
	c := clientAt(path, nil, coretest.Alice)
	var none, quotas []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if _, err := admin.SetPolicy([]string{"user-gpus=none", "user-hours=none"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		none = append(none, create(c))
		b.StopTimer()
		if _, err := admin.SetPolicy([]string{"user-gpus=8", "user-hours=10000/7d"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		quotas = append(quotas, create(c))
	}
	b.StopTimer()
	b.ReportMetric(coretest.Ms(coretest.Median(none)), "create-ms")
	b.ReportMetric(coretest.Ms(coretest.Median(quotas)), "create-quotas-ms")
	b.ReportMetric(float64(coretest.Median(quotas))/float64(coretest.Median(none)), "quotas/none")
}
