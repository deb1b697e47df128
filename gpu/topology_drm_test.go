package gpu

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// drmTopologyMatrix is the fixture's layout (testdata/drm/make-fixtures.py)
// by backend index, which follows PCI slots, not card numbers.
const drmTopologyMatrix = `	GPU0	GPU1	GPU2	GPU3	GPU4	GPU5
GPU0	 X 	PIX	PHB	NODE	SYS	SYS
GPU1	PIX	 X 	PHB	NODE	SYS	SYS
GPU2	PHB	PHB	 X 	NODE	SYS	SYS
GPU3	NODE	NODE	NODE	 X 	SYS	SYS
GPU4	SYS	SYS	SYS	SYS	 X 	PIX
GPU5	SYS	SYS	SYS	SYS	PIX	 X 
`

// numaFile is where the fixture keeps the numa_node of the GPU in slot.
func numaFile(t *testing.T, root, slot string) string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(filepath.Join(root, "sys/devices"), func(path string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() && e.Name() == slot {
			found = append(found, filepath.Join(path, "numa_node"))
		}
		return err
	})
	require.NoError(t, err)
	require.Len(t, found, 1, slot)
	return found[0]
}

func TestDRMTopology(t *testing.T) {
	t.Parallel()
	d := openFixture(t, fixture("topology"), nil)
	devs, err := d.Devices()
	require.NoError(t, err)
	require.Len(t, devs, 6)
	require.Equal(t, "amdgpu-0000:03:00.0", devs[0].UUID)
	require.Equal(t, "amdgpu-0000:84:00.0", devs[5].UUID)

	want, err := ParseTopologyMatrix([]byte(drmTopologyMatrix))
	require.NoError(t, err)
	got := TopologyOf(d)
	require.True(t, got.Equal(want), "got\n%swant\n%s", got, want)
}

// Across root complexes the NUMA node decides; a numa_node that is missing
// or known on one side only leaves the link unknown, while links within
// one root complex still show.
func TestDRMTopologyNUMA(t *testing.T) {
	t.Parallel()
	root := copyTree(t, fixture("topology"))
	require.NoError(t, os.Remove(numaFile(t, root, "0000:03:00.0")))                           // GPU 0
	require.NoError(t, os.WriteFile(numaFile(t, root, "0000:41:00.0"), []byte("-1\n"), 0o644)) // GPU 3
	require.NoError(t, os.WriteFile(numaFile(t, root, "0000:83:00.0"), []byte("-1\n"), 0o644)) // GPU 4
	topo := openFixture(t, root, nil).Topology()
	for pair, want := range map[[2]int]LinkLevel{
		{0, 1}: LinkPCIeSwitch, {0, 2}: LinkHostBridge, // one root complex: no node needed
		{0, 3}: LinkUnknown, {0, 5}: LinkUnknown, // no numa_node file
		{3, 4}: LinkNUMANode,                     // both -1: a machine without NUMA is one node
		{3, 1}: LinkUnknown, {4, 2}: LinkUnknown, // -1 against a known node
		{1, 5}: LinkSystem, {4, 5}: LinkPCIeSwitch,
	} {
		require.Equal(t, want, topo.Link(pair[0], pair[1]).Level, "%v", pair)
	}
}

// A tree whose device directories are not links into sys/devices (copied
// without them) tells nothing about links; the backend still starts.
func TestDRMTopologyUnknown(t *testing.T) {
	t.Parallel()
	d := openFixture(t, fixture("multi"), nil)
	devs, err := d.Devices()
	require.NoError(t, err)
	topo := d.Topology()
	require.Equal(t, len(devs), topo.Len())
	require.False(t, topo.Known())
}
