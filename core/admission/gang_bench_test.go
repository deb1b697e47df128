package admission

import (
	"slices"
	"testing"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu"
)

// BenchmarkLinePlacementGangs is issue 23's second figure: laying out the
// line after a release — the plan a release's transaction makes — with
// 100 waiters of six users on 8 NVLinked GPUs, a fifth of them for
// several GPUs (2, 4 or 8; any --gpus N, or named), behind 16 live
// bookings that fill the GPUs. Each op releases one of the bookings (in
// turn) and plans the line on what is left, with caches as a fresh
// transaction has them. Reported: p50 and p99 in ms, and how many
// requests a plan granted, on average.
func BenchmarkLinePlacementGangs(b *testing.B) {
	topo := gpu.NewTopology(8)
	for x := range 8 {
		for y := x + 1; y < 8; y++ {
			topo.SetLink(x, y, gpu.Link{Level: gpu.LinkNVLink, NVLinks: 18})
		}
	}
	var parts []domain.Partition
	for i := range 16 {
		// Two halves of each GPU, ending 1–8 hours from now; two of them
		// a half of four GPUs each.
		end := 3600 * (1 + i%8)
		switch i {
		case 0:
			parts = append(parts, booked(1000+i%6, 50, -600, end, 0, 1, 2, 3))
		case 1:
			parts = append(parts, booked(1000+i%6, 50, -600, end, 4, 5, 6, 7))
		default:
			parts = append(parts, booked(1000+i%6, 50, -600, end, (i-2)%8))
		}
	}
	var line []domain.Request
	for i := range 100 {
		uid, created := 1000+i%6, 60*(100-i) // the oldest first
		pct := int64(25 * (1 + i%4))
		var r domain.Request
		switch {
		case i%5 == 2: // a fifth for several: 2, 4, 8 GPUs, most any
			n := []int{2, 4, 8}[i/5%3]
			r = anyOf(uid, pct, 3600*(1+i%6), created, n)
			if i%15 == 7 {
				r = ask(uid, pct, 3600*(1+i%6), created, []int{0, 1, 2, 3, 4, 5, 6, 7}[:n]...)
			}
		case i%3 == 0:
			r = ask(uid, pct, 1800*(1+i%8), created, i%8)
		default:
			r = ask(uid, pct, 1800*(1+i%8), created, domain.AnyDevice)
		}
		line = append(line, r)
	}
	bk := gangBooks(b, 8, &topo, parts, line)
	all := slices.Clone(bk.Parts)
	var took []time.Duration
	grants := 0
	for i := 0; b.Loop(); i++ {
		bk.Parts = slices.Delete(slices.Clone(all), i%len(all), i%len(all)+1)
		bk.Limits, bk.HeldBy = map[int]policy.Limits{}, map[int]Calendar{}
		t := time.Now()
		plan, err := bk.Plan(nil)
		took = append(took, time.Since(t))
		if err != nil {
			b.Fatal(err)
		}
		if len(plan.Order)+len(plan.Grants) != len(line) {
			b.Fatalf("%d waiting and %d granted of %d", len(plan.Order), len(plan.Grants), len(line))
		}
		grants += len(plan.Grants)
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)])/1e6, "p99-ms")
	b.ReportMetric(float64(grants)/float64(len(took)), "grants/op")
}
