package gpu

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// pciAddress is a PCI device as NVML's PciInfo names it; a GPU is function
// 0, which PciInfo leaves out.
type pciAddress struct{ domain, bus, device uint32 }

func pciAddressOf(p nvml.PciInfo) pciAddress { return pciAddress{p.Domain, p.Bus, p.Device} }

// nvmlTopology reads how the GPUs are connected, once, when the backend
// starts: NVLinks from each GPU's link states (a link's far end is another
// GPU, found by its PCI address, or an NVSwitch, which joins every GPU with
// switch links), PCIe from NVML's common ancestor of each pair. What a GPU
// cannot tell (NOT_SUPPORTED without NVLink, under MIG or in a VM) leaves
// that link unknown; it never stops the backend.
func nvmlTopology(devs []nvmlDevice) Topology {
	t := NewTopology(len(devs))
	byPCI := map[pciAddress]int{}
	for i, d := range devs {
		if p, ret := d.handle.GetPciInfo(); ret == nvml.SUCCESS {
			byPCI[pciAddressOf(p)] = i
		}
	}
	direct := make([][]int, len(devs)) // direct[a][b]: a's active links whose far end is b
	switchLinks := make([]int, len(devs))
	for i, d := range devs {
		direct[i] = make([]int, len(devs))
		for link := range nvml.NVLINK_MAX_LINKS {
			state, ret := d.handle.GetNvLinkState(link)
			if ret != nvml.SUCCESS || state != nvml.FEATURE_ENABLED {
				continue // no such link, inactive, or no NVLink at all
			}
			if kind, ret := d.handle.GetNvLinkRemoteDeviceType(link); ret == nvml.SUCCESS && kind == nvml.NVLINK_DEVICE_TYPE_SWITCH {
				switchLinks[i]++
				continue
			}
			remote, ret := d.handle.GetNvLinkRemotePciInfo(link)
			if ret != nvml.SUCCESS {
				continue
			}
			if j, ok := byPCI[pciAddressOf(remote)]; ok && j != i {
				direct[i][j]++
			}
		}
	}
	for a := range devs {
		for b := a + 1; b < len(devs); b++ {
			var l Link
			switch {
			case max(direct[a][b], direct[b][a]) > 0:
				l = Link{Level: LinkNVLink, NVLinks: max(direct[a][b], direct[b][a])}
			case switchLinks[a] > 0 && switchLinks[b] > 0:
				l = Link{Level: LinkNVLink, NVLinks: min(switchLinks[a], switchLinks[b])}
			default:
				level, ret := devs[a].handle.GetTopologyCommonAncestor(devs[b].handle)
				if ret == nvml.SUCCESS {
					l.Level = pcieLevel(level)
				}
			}
			t.SetLink(a, b, l)
		}
	}
	return t
}

// pcieLevel is NVML's common-ancestor level as a LinkLevel. Two GPUs on one
// board (TOPOLOGY_INTERNAL) sit behind the board's own PCIe switch, which
// nvidia-smi shows as PIX.
func pcieLevel(l nvml.GpuTopologyLevel) LinkLevel {
	switch l {
	case nvml.TOPOLOGY_INTERNAL, nvml.TOPOLOGY_SINGLE, nvml.TOPOLOGY_MULTIPLE:
		return LinkPCIeSwitch
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return LinkHostBridge
	case nvml.TOPOLOGY_NODE:
		return LinkNUMANode
	case nvml.TOPOLOGY_SYSTEM:
		return LinkSystem
	}
	return LinkUnknown
}
