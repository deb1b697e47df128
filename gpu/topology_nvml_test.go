package gpu

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"
)

// withAncestors sets every GPU's common ancestor with every other from
// level(a, b).
func withAncestors(gpus []*fakeGPU, level func(a, b int) nvml.GpuTopologyLevel) {
	for a, g := range gpus {
		g.ancestors = make([]nvml.GpuTopologyLevel, len(gpus))
		for b := range gpus {
			g.ancestors[b] = level(a, b)
		}
	}
}

// dgxBox is an HGX/DGX H100-like box: eight GPUs, each with 18 NVLinks to
// the NVSwitches; on PCIe, pairs share a switch and the halves are on two
// sockets.
func dgxBox() []*fakeGPU {
	gpus := make([]*fakeGPU, 8)
	for i := range gpus {
		gpus[i] = h200(i)
		gpus[i].nvlinks = make([]fakeNVLink, 18)
		for l := range gpus[i].nvlinks {
			gpus[i].nvlinks[l] = fakeNVLink{toSwitch: true, remote: nvml.PciInfo{Domain: 7, Bus: uint32(l)}}
		}
	}
	withAncestors(gpus, func(a, b int) nvml.GpuTopologyLevel {
		switch {
		case a/2 == b/2:
			return nvml.TOPOLOGY_SINGLE
		case a/4 == b/4:
			return nvml.TOPOLOGY_NODE
		}
		return nvml.TOPOLOGY_SYSTEM
	})
	return gpus
}

// pcieBox is a PCIe box without NVLink: GPUs 0-3 under one PCIe switch,
// 4-7 under another, the two switches on different NUMA nodes.
func pcieBox() []*fakeGPU {
	gpus := make([]*fakeGPU, 8)
	for i := range gpus {
		gpus[i] = h200(i)
	}
	withAncestors(gpus, func(a, b int) nvml.GpuTopologyLevel {
		if a/4 == b/4 {
			return nvml.TOPOLOGY_SINGLE
		}
		return nvml.TOPOLOGY_SYSTEM
	})
	return gpus
}

// openBox opens NVML on the mocked GPUs and hands back the mock too.
func openBox(t *testing.T, gpus []*fakeGPU) (*NVML, *mock.Interface) {
	t.Helper()
	lib := fakeLibrary(gpus, new(int))
	n, err := NewNVML(lib)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	return n, lib
}

func TestNVMLTopologyDGX(t *testing.T) {
	t.Parallel()
	n, _ := openBox(t, dgxBox())
	requireAllPairs(t, n.Topology(), func(int, int) Link { return Link{Level: LinkNVLink, NVLinks: 18} })

	// A GPU with a link down reaches the others over the links it has left.
	gpus := dgxBox()
	gpus[3].nvlinks[5].down = true
	n, _ = openBox(t, gpus)
	topo := n.Topology()
	require.Equal(t, Link{Level: LinkNVLink, NVLinks: 17}, topo.Link(3, 6))
	require.Equal(t, Link{Level: LinkNVLink, NVLinks: 18}, topo.Link(2, 6))
}

func TestNVMLTopologyPCIe(t *testing.T) {
	t.Parallel()
	n, _ := openBox(t, pcieBox())
	topo := TopologyOf(n)
	require.True(t, topo.Equal(topologyFixture(t, "pcie-2switch")), "%s", topo)

	// The backend keeps its own: what a caller does to its copy stays there.
	topo.SetLink(0, 1, Link{Level: LinkNVLink})
	require.Equal(t, Link{Level: LinkPCIeSwitch}, n.Topology().Link(0, 1))
}

// NVLink bridges join pairs directly: a link counts for the GPU at its far
// end, found by PCI address; a link that is down, or whose far end is no GPU
// of this host, does not count. Every NVML common-ancestor level maps to
// its LinkLevel.
func TestNVMLTopologyBridges(t *testing.T) {
	t.Parallel()
	gpus := []*fakeGPU{h200(0), h200(1), h200(2), h200(3)}
	to := func(g int) fakeNVLink { return fakeNVLink{remote: gpus[g].pci} }
	gpus[0].nvlinks = []fakeNVLink{to(1), to(1)}
	gpus[1].nvlinks = []fakeNVLink{to(0), to(0)}
	gpus[2].nvlinks = []fakeNVLink{to(3), {remote: gpus[3].pci, down: true}, {remote: nvml.PciInfo{Domain: 9, Bus: 4}}}
	gpus[3].nvlinks = []fakeNVLink{to(2)}
	ancestors := [4][4]nvml.GpuTopologyLevel{
		{0, nvml.TOPOLOGY_MULTIPLE, nvml.TOPOLOGY_HOSTBRIDGE, nvml.TOPOLOGY_NODE},
		{nvml.TOPOLOGY_MULTIPLE, 0, nvml.TOPOLOGY_SYSTEM, nvml.TOPOLOGY_INTERNAL},
		{nvml.TOPOLOGY_HOSTBRIDGE, nvml.TOPOLOGY_SYSTEM, 0, nvml.TOPOLOGY_SINGLE},
		{nvml.TOPOLOGY_NODE, nvml.TOPOLOGY_INTERNAL, nvml.TOPOLOGY_SINGLE, 0},
	}
	withAncestors(gpus, func(a, b int) nvml.GpuTopologyLevel { return ancestors[a][b] })
	n, _ := openBox(t, gpus)
	topo := n.Topology()
	want := map[[2]int]Link{
		{0, 1}: {Level: LinkNVLink, NVLinks: 2},
		{2, 3}: {Level: LinkNVLink, NVLinks: 1},
		{0, 2}: {Level: LinkHostBridge},
		{0, 3}: {Level: LinkNUMANode},
		{1, 2}: {Level: LinkSystem},
		{1, 3}: {Level: LinkPCIeSwitch},
	}
	for pair, l := range want {
		require.Equal(t, l, topo.Link(pair[0], pair[1]), "%v", pair)
	}
	require.Equal(t, Link{Level: LinkHostBridge}, Link{Level: pcieLevel(nvml.TOPOLOGY_HOSTBRIDGE)})
	require.Equal(t, LinkUnknown, pcieLevel(nvml.GpuTopologyLevel(60)), "a level newer than this code")
}

// A GPU that cannot tell (no NVLink, MIG, a VM: a one-H200 VM with driver
// 580 answered NOT_SUPPORTED to every NVLink query) leaves its links unknown:
// the backend starts and samples as before. The topology is read once, at
// start, never per sample.
func TestNVMLTopologyUnsupported(t *testing.T) {
	t.Parallel()
	gpus := []*fakeGPU{h200(0), h200(1), h200(2)}
	gpus[1].mig = true
	n, lib := openBox(t, gpus)
	topo := n.Topology()
	require.Equal(t, 3, topo.Len())
	require.False(t, topo.Known())

	dev, _ := lib.DeviceGetHandleByIndex(0)
	calls := func() int {
		m := dev.(*mock.Device)
		return len(m.GetTopologyCommonAncestorCalls()) + len(m.GetNvLinkStateCalls())
	}
	before := calls()
	require.Positive(t, before)
	for range 3 {
		s, err := n.Sample()
		require.NoError(t, err)
		require.Len(t, s.Devices, 3)
	}
	require.Equal(t, before, calls(), "sampling asks NVML nothing about links")
}
