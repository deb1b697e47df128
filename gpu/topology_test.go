package gpu

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// topologyFixture reads testdata/topologies/NAME.txt.
func topologyFixture(t testing.TB, name string) Topology {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "topologies", name+".txt"))
	require.NoError(t, err)
	topo, err := ParseTopologyMatrix(b)
	require.NoError(t, err)
	return topo
}

// requireAllPairs checks every pair of the topology's GPUs has want.
func requireAllPairs(t *testing.T, topo Topology, want func(a, b int) Link) {
	t.Helper()
	for a := range topo.Len() {
		for b := range topo.Len() {
			if a != b {
				require.Equal(t, want(a, b), topo.Link(a, b), "GPU%d-GPU%d", a, b)
			}
		}
	}
}

func TestLinkLevelOrderAndNames(t *testing.T) {
	t.Parallel()
	want := []string{"NVLink", "PCIe switch", "host bridge", "NUMA node", "across NUMA nodes", "unknown"}
	for i, l := range linkLevels {
		require.Equal(t, want[i], l.String())
		if i > 0 {
			require.Greater(t, linkLevels[i-1], l, "%s ranks above %s", linkLevels[i-1], l)
		}
		text, err := l.MarshalText()
		require.NoError(t, err)
		var back LinkLevel
		require.NoError(t, back.UnmarshalText(text))
		require.Equal(t, l, back)
	}
	require.Equal(t, LinkUnknown, LinkLevel(0), "the zero value knows nothing")
	require.Equal(t, "LinkLevel(9)", LinkLevel(9).String())
	_, err := LinkLevel(9).MarshalText()
	require.ErrorIs(t, err, ErrLinkLevel)
	var l LinkLevel
	require.ErrorIs(t, l.UnmarshalText([]byte("carrier pigeon")), ErrLinkLevel)
	require.Equal(t, "NVLink ×18", Link{Level: LinkNVLink, NVLinks: 18}.String())
	require.Equal(t, "NVLink", Link{Level: LinkNVLink}.String())
	require.Equal(t, "PCIe switch", Link{Level: LinkPCIeSwitch}.String())
}

func TestTopologyLinks(t *testing.T) {
	t.Parallel()
	topo := NewTopology(3)
	require.Equal(t, 3, topo.Len())
	require.False(t, topo.Known())
	topo.SetLink(0, 2, Link{Level: LinkNVLink, NVLinks: 2})
	require.True(t, topo.Known())
	require.Equal(t, Link{Level: LinkNVLink, NVLinks: 2}, topo.Link(2, 0), "links are the same both ways")
	for _, pair := range [][2]int{{1, 1}, {-1, 0}, {0, 3}, {7, 9}} {
		require.Equal(t, Link{}, topo.Link(pair[0], pair[1]), "%v", pair)
	}
	require.Panics(t, func() { topo.SetLink(1, 1, Link{}) })
	require.Panics(t, func() { topo.SetLink(0, 3, Link{}) })

	c := topo.clone()
	c.SetLink(0, 1, Link{Level: LinkSystem})
	require.Equal(t, Link{}, topo.Link(0, 1), "a clone is the caller's own")
	require.False(t, c.Equal(topo))
	require.Equal(t, 0, NewTopology(-2).Len())
}

func TestTopologyJSON(t *testing.T) {
	t.Parallel()
	topo := topologyFixture(t, "dgx1-v100")
	b, err := json.Marshal(topo)
	require.NoError(t, err)
	require.Contains(t, string(b), `{"a":0,"b":1,"level":"NVLink","nvlinks":1}`)
	require.Contains(t, string(b), `{"a":0,"b":5,"level":"across NUMA nodes"}`)
	var back Topology
	require.NoError(t, json.Unmarshal(b, &back))
	require.True(t, back.Equal(topo), "%s", back)

	empty, err := json.Marshal(NewTopology(2))
	require.NoError(t, err)
	require.JSONEq(t, `{"gpus":2,"links":[]}`, string(empty))

	for in, msg := range map[string]string{
		`{"gpus":2,"links":[{"a":0,"b":2,"level":"NVLink"}]}`:                                "link 0-2",
		`{"gpus":2,"links":[{"a":1,"b":1,"level":"NVLink"}]}`:                                "link 1-1",
		`{"gpus":2,"links":[{"a":0,"b":1,"level":"NVLink"},{"a":1,"b":0,"level":"NVLink"}]}`: "given twice",
		`{"gpus":2,"links":[{"a":0,"b":1,"level":"NVLink","nvlinks":-1}]}`:                   "link 0-1",
		`{"gpus":2,"links":[{"a":0,"b":1,"level":"smoke signals"}]}`:                         "unknown GPU link level",
		`{"gpus":99999999}`: "99999999 GPUs",
		`[1,2]`:             "cannot unmarshal",
	} {
		var got Topology
		err := json.Unmarshal([]byte(in), &got)
		require.ErrorIs(t, err, ErrTopology, in)
		require.ErrorContains(t, err, msg, in)
	}
}

func TestParseTopologyMatrixFixtures(t *testing.T) {
	t.Parallel()
	hgx := topologyFixture(t, "hgx-h100")
	require.Equal(t, 8, hgx.Len(), "the NIC columns are not GPUs")
	requireAllPairs(t, hgx, func(int, int) Link { return Link{Level: LinkNVLink, NVLinks: 18} })

	pcie := topologyFixture(t, "pcie-2switch")
	require.Equal(t, 8, pcie.Len())
	requireAllPairs(t, pcie, func(a, b int) Link {
		if a/4 == b/4 {
			return Link{Level: LinkPCIeSwitch}
		}
		return Link{Level: LinkSystem}
	})

	// A real dump: one GPU, a blank affinity cell, escapes in the header.
	vm := topologyFixture(t, "h200-1gpu-vm")
	require.Equal(t, 1, vm.Len())
	require.False(t, vm.Known())

	dgx1 := topologyFixture(t, "dgx1-v100")
	require.Equal(t, Link{Level: LinkNVLink, NVLinks: 2}, dgx1.Link(0, 3))
	require.Equal(t, Link{Level: LinkNVLink, NVLinks: 1}, dgx1.Link(7, 3))
	require.Equal(t, Link{Level: LinkSystem}, dgx1.Link(0, 5))
}

// Every recorded topology, those added later included, reads back from
// what String writes and can place every count of GPUs.
func TestTopologyFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "topologies", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		topo := topologyFixture(t, strings.TrimSuffix(filepath.Base(f), ".txt"))
		back, err := ParseTopologyMatrix([]byte(topo.String()))
		require.NoError(t, err, f)
		require.True(t, back.Equal(topo), "%s:\n%s", f, back)
		for n := 1; n <= topo.Len(); n++ {
			p, err := Place(topo, upTo(topo.Len()), n)
			require.NoError(t, err, "%s: %d GPUs", f, n)
			require.Len(t, p.GPUs, n)
		}
	}
}

func TestParseTopologyMatrixRefuses(t *testing.T) {
	t.Parallel()
	var wide strings.Builder
	for i := range maxTopologyGPUs + 1 {
		fmt.Fprintf(&wide, "\tGPU%d", i)
	}
	tooWide := wide.String()
	for in, msg := range map[string]string{
		"":                               "no header of GPU columns",
		"nothing here\n":                 "no header of GPU columns",
		tooWide:                          "1025 GPU columns, more than 1024",
		"\tGPU0\tGPU2\nGPU0\t X \tNV1":   "column 2 is GPU2, not GPU1",
		"\tGPU0\tGPU1\nGPU0\t X \tNV1\n": "2 GPU columns but 1 GPU rows",
		"\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU1\tNV1\t X\nGPU1\tNV1\t X\n": "row GPU1 repeated",
		"\tGPU0\tGPU1\nGPU0\t X \tNV1\nGPU2\tNV1\t X\n":                "row GPU2 repeated or outside",
		"\tGPU0\tGPU1\nGPU0\t X\n":                                     "row GPU0 has 1 cells, not 2",
		"\tGPU0\tGPU1\nGPU0\tPIX\tNV1\nGPU1\tNV1\t X\n":                `GPU0 with itself is "PIX"`,
		"\tGPU0\tGPU1\nGPU0\t X \tWIFI\nGPU1\tNV1\t X\n":               `GPU0-GPU1: "WIFI" is not`,
		"\tGPU0\tGPU1\nGPU0\t X \tNV0\nGPU1\tNV0\t X\n":                `"NV0" is not`,
		"\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU1\tNV1\t X\n":                "GPU0-GPU1 is NV2 but GPU1-GPU0 is NV1",
		"\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tSYS\t X\n":                "GPU0-GPU1 is PIX but GPU1-GPU0 is SYS",
	} {
		_, err := ParseTopologyMatrix([]byte(in))
		require.ErrorIs(t, err, ErrTopology, "%q", in)
		require.ErrorContains(t, err, msg, "%q", in)
	}
	// Old drivers' SOC, a bare NV and PXB read as their levels; the legend
	// and what follows it are not rows.
	topo, err := ParseTopologyMatrix([]byte("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tSOC\tPXB\nGPU1\tSOC\t X \tNV\nGPU2\tPXB\tNV\t X \n\nLegend:\nGPU9 X\n"))
	require.NoError(t, err)
	require.Equal(t, Link{Level: LinkSystem}, topo.Link(0, 1))
	require.Equal(t, Link{Level: LinkPCIeSwitch}, topo.Link(0, 2))
	require.Equal(t, Link{Level: LinkNVLink}, topo.Link(1, 2))
}

// plainBackend is a Backend that cannot tell its topology: only Backend's
// methods are promoted.
type plainBackend struct{ Backend }

func TestTopologyOf(t *testing.T) {
	t.Parallel()
	sim := NewSim(SimOptions{Count: 8})
	topo := TopologyOf(sim)
	require.Equal(t, 8, topo.Len())
	requireAllPairs(t, topo, func(a, b int) Link {
		switch {
		case a/2 == b/2:
			return Link{Level: LinkNVLink, NVLinks: 4}
		case a/4 == b/4:
			return Link{Level: LinkPCIeSwitch}
		}
		return Link{Level: LinkSystem}
	})
	require.Equal(t, Link{Level: LinkNUMANode}, TopologyOf(NewSim(SimOptions{Count: 16})).Link(0, 8))

	plain := TopologyOf(plainBackend{Backend: sim})
	require.Equal(t, 8, plain.Len())
	require.False(t, plain.Known())
}

// FuzzTopologyMatrix: reading never panics; what is read is symmetric and
// reads back the same from String, and survives JSON.
func FuzzTopologyMatrix(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "topologies", "*.txt"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("\tGPU0\tGPU1\nGPU0\t X \tNV99999999999999999999\nGPU1\tNV1\t X\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		topo, err := ParseTopologyMatrix(b)
		if err != nil {
			require.ErrorIs(t, err, ErrTopology)
			return
		}
		require.Positive(t, topo.Len())
		for a := range topo.Len() {
			for c := range topo.Len() {
				require.Equal(t, topo.Link(a, c), topo.Link(c, a))
			}
		}
		back, err := ParseTopologyMatrix([]byte(topo.String()))
		require.NoError(t, err)
		require.True(t, back.Equal(topo), "%q reads as\n%s", b, topo)
		j, err := json.Marshal(topo)
		require.NoError(t, err)
		var fromJSON Topology
		require.NoError(t, json.Unmarshal(j, &fromJSON))
		require.True(t, fromJSON.Equal(topo))
	})
}
