package gpu

import (
	"path/filepath"
	"strconv"
	"strings"
)

// pciPath is where a GPU sits in the PCI tree: its sysfs path below
// sys/devices, as the root complex (pci0000:00) and the bridges down to
// the GPU, and the NUMA node the kernel gives it.
type pciPath struct {
	parts []string // "pci0000:00", "0000:00:01.1", …, the GPU's own address last
	numa  int      // -1: the kernel knows no node (one node); noNUMAFile
}

// noNUMAFile marks a GPU whose numa_node could not be read.
const noNUMAFile = -2

// drmTopology reads how the GPUs are connected from sysfs, once, when the
// backend starts: the kernel's device path of each GPU (what
// /sys/class/drm/cardN/device links to) shows the bridges above it. Two GPUs
// below a common bridge share a PCIe switch; below only the same root
// complex, a host bridge; otherwise their numa_node files tell one NUMA node
// from two (both -1, a machine without NUMA, is one). A GPU whose path is
// not a PCI device's (a copied tree without links) has its links unknown,
// as are those across root complexes when a numa_node is missing.
func drmTopology(root string, devs []drmDevice) Topology {
	t := NewTopology(len(devs))
	devices, err := filepath.EvalSymlinks(filepath.Join(root, "sys/devices"))
	if err != nil {
		return t
	}
	paths := make([]*pciPath, len(devs))
	for i, d := range devs {
		paths[i] = readPCIPath(devices, d.dir)
	}
	for a := range devs {
		for b := a + 1; b < len(devs); b++ {
			if paths[a] != nil && paths[b] != nil {
				t.SetLink(a, b, Link{Level: pciLink(*paths[a], *paths[b])})
			}
		}
	}
	return t
}

// readPCIPath resolves a GPU's sysfs directory below devices; nil when it
// is not there or not a PCI device.
func readPCIPath(devices, dir string) *pciPath {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil
	}
	rel, err := filepath.Rel(devices, real)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return nil
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) < 2 || !strings.HasPrefix(parts[0], "pci") {
		return nil
	}
	numa, err := strconv.Atoi(strings.TrimSpace(readSysfs(dir, "numa_node")))
	if err != nil || numa < -1 {
		numa = noNUMAFile
	}
	return &pciPath{parts: parts, numa: numa}
}

// pciLink is the level at which two GPUs' paths meet.
func pciLink(a, b pciPath) LinkLevel {
	if a.parts[0] != b.parts[0] {
		switch {
		case a.numa == noNUMAFile || b.numa == noNUMAFile:
			return LinkUnknown
		case a.numa == b.numa:
			return LinkNUMANode
		case a.numa < 0 || b.numa < 0:
			return LinkUnknown // one node known, the other not
		}
		return LinkSystem
	}
	// Shared components besides the root complex, leaving out the GPUs'
	// own addresses: a bridge both hang below.
	shared := 0
	for shared < min(len(a.parts), len(b.parts))-1 && a.parts[shared] == b.parts[shared] {
		shared++
	}
	if shared > 1 {
		return LinkPCIeSwitch
	}
	return LinkHostBridge
}
