package admission

import (
	"testing"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/policy"
)

// BenchmarkCreateAmongManyBookings is a create's admission (the plan of
// one request, nobody waiting) while one member keeps 700 live bookings of
// 0.1% of GPU 0, made a second apart (a flood of creates it keeps): that
// member's next create on GPU 0, and another member's on GPU 1. Laying a
// track's steps out one slot at a time cost the square of its slots.
func BenchmarkCreateAmongManyBookings(b *testing.B) {
	var parts []domain.Partition
	for i := range 700 {
		p := booked(1001, 1, -i, 3600-i, 0)
		p.SharePPM = 1000
		parts = append(parts, p)
	}
	for _, c := range []struct {
		name string
		r    domain.Request
	}{{"theirs", ask(1001, 1, 3600, 0, 0)}, {"another", ask(1002, 1, 3600, 0, 1)}} {
		b.Run(c.name, func(b *testing.B) {
			bk := gangBooks(b, 2, nil, parts, nil)
			for b.Loop() {
				bk.Limits, bk.HeldBy = map[int]policy.Limits{}, map[int]Calendar{}
				r := c.r
				if _, err := bk.Plan(&r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
