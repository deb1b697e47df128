package gpu

import (
	"strconv"
	"strings"

	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// VisibleEnv is the environment that shows a command only the GPU it
// booked, in its vendor runtime's terms, as KEY=value entries. uuid and
// index are the booked device's as the inventory knows them.
//
//   - NVIDIA (and simulated GPUs): CUDA_VISIBLE_DEVICES, by UUID where NVML
//     gave one, since CUDA may number GPUs differently from NVML.
//   - AMD (ROCm): ROCR_VISIBLE_DEVICES names the GPU, by its unique id
//     ("GPU-…", as rocminfo prints it) where the card has one, else by its
//     place among the AMD GPUs in PCI order. HIP_VISIBLE_DEVICES and
//     CUDA_VISIBLE_DEVICES, which HIP also reads, count within what ROCR
//     leaves, so they are 0.
//   - Intel (oneAPI Level Zero): ZE_AFFINITY_MASK is the GPU's place among
//     the Intel GPUs, with ZE_ENABLE_PCI_ID_DEVICE_ORDER=1 so that Level
//     Zero counts them in PCI order too.
//
// A DRM GPU that is no longer in /sys/class/drm is named -1: nothing.
func VisibleEnv(uuid string, index int) []string {
	return VisibleEnvOf([]string{uuid}, []int{index})
}

// VisibleEnvOf is VisibleEnv for a booking of several GPUs of one host,
// uuids[i] and indices[i] naming each: the command sees them all, in that
// order, and counts them from 0.
func VisibleEnvOf(uuids []string, indices []int) []string {
	driver, _, drm := strings.Cut(uuids[0], "-")
	vendor := drmDrivers[driver]
	if !drm || vendor == "" {
		return []string{"CUDA_VISIBLE_DEVICES=" + procfs.CUDADevices(uuids, indices)}
	}
	selectors := make([]string, len(uuids))
	counted := make([]string, len(uuids))
	for i, uuid := range uuids {
		_, slot, _ := strings.Cut(uuid, "-")
		selectors[i], counted[i] = drmSelector(drmRoot(), vendor, slot), strconv.Itoa(i)
	}
	if vendor == vendorAMD {
		inner := strings.Join(counted, ",")
		return []string{"ROCR_VISIBLE_DEVICES=" + strings.Join(selectors, ","), "HIP_VISIBLE_DEVICES=" + inner, "CUDA_VISIBLE_DEVICES=" + inner}
	}
	return []string{"ZE_ENABLE_PCI_ID_DEVICE_ORDER=1", "ZE_AFFINITY_MASK=" + strings.Join(selectors, ",")}
}

// drmSelector names the GPU at slot to its vendor's runtime: an AMD card's
// unique id, else the GPU's place among its vendor's GPUs in PCI order.
func drmSelector(root, vendor, slot string) string {
	devs, err := enumerateDRM(root)
	if err != nil {
		return "-1"
	}
	n := 0
	for _, d := range devs {
		if drmDrivers[d.driver] != vendor {
			continue
		}
		if d.slot == slot {
			if vendor == vendorAMD {
				if id := strings.TrimSpace(readSysfs(d.dir, "unique_id")); isHex(id) {
					return "GPU-" + id
				}
			}
			return strconv.Itoa(n)
		}
		n++
	}
	return "-1"
}

func isHex(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}
