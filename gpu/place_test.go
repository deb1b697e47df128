package gpu

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// upTo is 0 … n-1.
func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func requirePlace(t *testing.T, topo Topology, free []int, n int, gpus []int, reason string) Placement {
	t.Helper()
	p, err := Place(topo, free, n)
	require.NoError(t, err, "%v of %d", free, n)
	require.Equal(t, gpus, p.GPUs, "%d of %v: %s", n, free, p.Reason)
	require.Equal(t, reason, p.Reason)
	return p
}

// On a box where every pair is NVLink, any four are as good: the lowest.
// The mocked NVML box and the recorded matrix place alike.
func TestPlaceDGX(t *testing.T) {
	t.Parallel()
	n, _ := openBox(t, dgxBox())
	for _, topo := range []Topology{n.Topology(), topologyFixture(t, "hgx-h100")} {
		p := requirePlace(t, topo, upTo(8), 4, []int{0, 1, 2, 3}, "GPUs 0-3: all pairs NVLink")
		require.Equal(t, LinkNVLink, p.Worst)
		require.Equal(t, map[LinkLevel]int{LinkNVLink: 6}, p.Pairs)
		requirePlace(t, topo, []int{7, 5, 3, 1}, 4, []int{1, 3, 5, 7}, "GPUs 1,3,5,7: all pairs NVLink")
		requirePlace(t, topo, []int{2, 6}, 2, []int{2, 6}, "GPUs 2,6: NVLink ×18")
		requirePlace(t, topo, upTo(8), 8, upTo(8), "GPUs 0-7: all pairs NVLink")
	}
}

// Two PCIe switches of four on two NUMA nodes: a switch's four together
// when they have room; across the nodes only when nothing else is left,
// saying so.
func TestPlacePCIe(t *testing.T) {
	t.Parallel()
	n, _ := openBox(t, pcieBox())
	for _, topo := range []Topology{n.Topology(), topologyFixture(t, "pcie-2switch")} {
		requirePlace(t, topo, upTo(8), 4, []int{0, 1, 2, 3}, "GPUs 0-3: all pairs same PCIe switch")
		requirePlace(t, topo, []int{0, 1, 2, 3, 5}, 4, []int{0, 1, 2, 3}, "GPUs 0-3: all pairs same PCIe switch")
		requirePlace(t, topo, []int{0, 1, 4, 5, 6, 7}, 4, []int{4, 5, 6, 7}, "GPUs 4-7: all pairs same PCIe switch")
		requirePlace(t, topo, []int{0, 4, 6}, 2, []int{4, 6}, "GPUs 4,6: same PCIe switch")
		p := requirePlace(t, topo, []int{0, 4}, 2, []int{0, 4},
			"GPUs 0,4: across NUMA nodes (no pair on one PCIe switch had room)")
		require.Equal(t, LinkSystem, p.Worst)
		p = requirePlace(t, topo, []int{0, 1, 2, 4}, 4, []int{0, 1, 2, 4},
			"GPUs 0-2,4: worst pair across NUMA nodes (of 6 pairs: 3 PCIe switch, 3 across NUMA nodes)"+
				" (no 4 GPUs on one PCIe switch had room)")
		require.Equal(t, map[LinkLevel]int{LinkPCIeSwitch: 3, LinkSystem: 3}, p.Pairs)
		// Three on one switch beat two and two.
		requirePlace(t, topo, []int{0, 1, 4, 5, 6}, 3, []int{4, 5, 6}, "GPUs 4-6: all pairs same PCIe switch")
		requirePlace(t, topo, []int{0, 1, 4, 6}, 3, []int{0, 1, 4},
			"GPUs 0-1,4: worst pair across NUMA nodes (of 3 pairs: 1 PCIe switch, 2 across NUMA nodes)"+
				" (no 3 GPUs on one PCIe switch had room)")
	}
}

// Where NVLinks join only some pairs (DGX-1's cube mesh), the worst pair
// decides first, then the pairs at the best level, then the NVLinks: a
// pair with two links beats one with one.
func TestPlaceCubeMesh(t *testing.T) {
	t.Parallel()
	topo := topologyFixture(t, "dgx1-v100")
	requirePlace(t, topo, upTo(8), 2, []int{0, 3}, "GPUs 0,3: NVLink ×2")
	requirePlace(t, topo, upTo(8), 4, []int{0, 1, 2, 3}, "GPUs 0-3: all pairs NVLink")
	requirePlace(t, topo, []int{1, 2, 3, 4, 5, 6, 7}, 4, []int{4, 5, 6, 7}, "GPUs 4-7: all pairs NVLink")
	requirePlace(t, topo, []int{0, 5, 6, 7}, 2, []int{5, 6}, "GPUs 5-6: NVLink ×2")
	requirePlace(t, topo, []int{0, 1, 6, 7}, 2, []int{6, 7}, "GPUs 6-7: NVLink ×2")
	requirePlace(t, topo, []int{1, 2, 4, 7}, 2, []int{1, 2}, "GPUs 1-2: NVLink ×2")
	requirePlace(t, topo, []int{1, 4}, 2, []int{1, 4}, "GPUs 1,4: across NUMA nodes (no pair joined by NVLink had room)")
	requirePlace(t, topo, upTo(8), 8, upTo(8),
		"GPUs 0-7: worst pair across NUMA nodes (of 28 pairs: 16 NVLink, 12 across NUMA nodes)")
}

func TestPlaceUnknownAndSingle(t *testing.T) {
	t.Parallel()
	topo := NewTopology(4)
	p := requirePlace(t, topo, []int{3, 1, 2}, 2, []int{1, 2}, "GPUs 1-2: links unknown")
	require.Equal(t, LinkUnknown, p.Worst)
	requirePlace(t, topo, upTo(4), 3, []int{0, 1, 2}, "GPUs 0-2: all pairs links unknown")
	// GPUs past what the topology knows are candidates with unknown links.
	requirePlace(t, topo, []int{9, 12}, 2, []int{9, 12}, "GPUs 9,12: links unknown")

	p = requirePlace(t, topologyFixture(t, "pcie-2switch"), []int{6, 2}, 1, []int{2}, "GPU 2: a single GPU")
	b, err := json.Marshal(p)
	require.NoError(t, err)
	require.JSONEq(t, `{"gpus":[2],"reason":"GPU 2: a single GPU"}`, string(b))

	p = requirePlace(t, topologyFixture(t, "hgx-h100"), []int{0, 1}, 2, []int{0, 1}, "GPUs 0-1: NVLink ×18")
	b, err = json.Marshal(p)
	require.NoError(t, err)
	require.JSONEq(t, `{"gpus":[0,1],"worst_link":"NVLink","pairs":{"NVLink":1},"reason":"GPUs 0-1: NVLink ×18"}`, string(b))
}

func TestPlaceRefuses(t *testing.T) {
	t.Parallel()
	topo := topologyFixture(t, "pcie-2switch")
	for _, tc := range []struct {
		free []int
		n    int
		is   error
		msg  string
	}{
		{upTo(8), 0, ErrGPUCount, "a booking needs at least one GPU: 0 asked"},
		{upTo(8), -3, ErrGPUCount, "-3 asked"},
		{[]int{0, 4}, 3, ErrNotEnoughGPUs, "not enough GPUs with room: 3 GPUs asked, only 2 (GPUs 0,4) have room"},
		{nil, 1, ErrNotEnoughGPUs, "not enough GPUs with room: 1 GPU asked, none has room"},
		{upTo(8), 9, ErrNotEnoughGPUs, "only 8 (GPUs 0-7) have room"},
		{[]int{0, 1, 1}, 2, ErrGPUList, "GPU 1 is negative or given twice"},
		{[]int{0, -1}, 1, ErrGPUList, "GPU -1 is negative or given twice"},
	} {
		_, err := Place(topo, tc.free, tc.n)
		require.ErrorIs(t, err, tc.is, "%v %d", tc.free, tc.n)
		require.ErrorContains(t, err, tc.msg)
	}
}

// The same GPUs with room give the same placement, whatever their order.
func TestPlaceDeterministic(t *testing.T) {
	t.Parallel()
	topo := TopologyOf(NewSim(SimOptions{Count: 16}))
	free := []int{15, 3, 9, 4, 12, 0, 7, 10, 5}
	want, err := Place(topo, free, 4)
	require.NoError(t, err)
	require.Equal(t, []int{4, 5, 7, 12}, want.GPUs, want.Reason)
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		r.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		got, err := Place(topo, free, 4)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}

// naiveBest scores every n-set of cands without pruning; the first best in
// index order wins.
func naiveBest(t Topology, cands []int, n int) ([]int, placeScore) {
	var best []int
	var bestScore placeScore
	var walk func(from int, set []int)
	walk = func(from int, set []int) {
		if len(set) == n {
			s := placeScore{worst: noPairs}
			for i, g := range set {
				s = s.add(t, set[:i], g)
			}
			if best == nil || s.better(bestScore) {
				best, bestScore = slices.Clone(set), s
			}
			return
		}
		for i := from; i < len(cands); i++ {
			walk(i+1, append(set, cands[i]))
		}
	}
	walk(0, nil)
	return best, bestScore
}

// randomTopology links every pair of n GPUs at a random level.
func randomTopology(r *rand.Rand, n int) Topology {
	topo := NewTopology(n)
	for a := range n {
		for b := a + 1; b < n; b++ {
			l := Link{Level: linkLevels[r.IntN(len(linkLevels))]}
			if l.Level == LinkNVLink {
				l.NVLinks = r.IntN(4)
			}
			topo.SetLink(a, b, l)
		}
	}
	return topo
}

// Pruning never loses the best set; the greedy search, used past
// maxExhaustive sets, never claims a better worst link than there is.
func TestPlaceSearches(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		topo := randomTopology(r, 2+r.IntN(8))
		cands := upTo(topo.Len())
		n := 1 + r.IntN(topo.Len())
		want, wantScore := naiveBest(topo, cands, n)
		got, gotScore := exhaustive(topo, cands, n)
		require.Equal(t, want, got, "%d of\n%s", n, topo)
		require.Equal(t, wantScore, gotScore)
		g, gScore := greedy(topo, cands, n)
		require.Len(t, g, n)
		require.False(t, gScore.better(wantScore), "greedy %v beat exhaustive %v", g, want)
	}
}

// Past maxExhaustive sets the greedy search decides, and still keeps a
// NUMA node's GPUs together.
func TestPlaceLargeHost(t *testing.T) {
	t.Parallel()
	topo := TopologyOf(NewSim(SimOptions{Count: 32}))
	require.Greater(t, combinations(32, 16), maxExhaustive)
	requirePlace(t, topo, upTo(32), 16, []int{0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27},
		"GPUs 0-3,8-11,16-19,24-27: worst pair same NUMA node (of 120 pairs: 8 NVLink, 16 PCIe switch, 96 NUMA node)")
	requirePlace(t, topo, upTo(32), 4, []int{0, 1, 2, 3},
		"GPUs 0-3: worst pair same PCIe switch (of 6 pairs: 2 NVLink, 4 PCIe switch)")
}

func benchmarkPlace(b *testing.B, topo Topology, free []int, n int) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Place(topo, free, n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlace4of8: four of an HGX box's eight NVLinked GPUs, all free.
func BenchmarkPlace4of8(b *testing.B) {
	benchmarkPlace(b, topologyFixture(b, "hgx-h100"), upTo(8), 4)
}

// BenchmarkPlace4of8PCIe: four of a PCIe box with two GPUs busy, so the
// reason also looks for a better set among all eight.
func BenchmarkPlace4of8PCIe(b *testing.B) {
	benchmarkPlace(b, topologyFixture(b, "pcie-2switch"), []int{0, 1, 3, 4, 5, 7}, 4)
}

// BenchmarkPlace8of16: eight of sixteen GPUs in NVLink pairs, PCIe
// switches of four and two NUMA nodes: 12,870 sets, pruned.
func BenchmarkPlace8of16(b *testing.B) {
	benchmarkPlace(b, TopologyOf(NewSim(SimOptions{Count: 16})), upTo(16), 8)
}

// BenchmarkPlace8of16NVLink: eight of sixteen all NVLinked, where nothing
// prunes: every one of the 12,870 sets is scored.
func BenchmarkPlace8of16NVLink(b *testing.B) {
	topo := NewTopology(16)
	for a := range 16 {
		for c := a + 1; c < 16; c++ {
			topo.SetLink(a, c, Link{Level: LinkNVLink, NVLinks: 12})
		}
	}
	benchmarkPlace(b, topo, upTo(16), 8)
}

// BenchmarkPlace16of32: past maxExhaustive, the greedy search.
func BenchmarkPlace16of32(b *testing.B) {
	benchmarkPlace(b, TopologyOf(NewSim(SimOptions{Count: 32})), upTo(32), 16)
}
