package procfs

import (
	"strconv"
	"strings"
)

// CUDADevices is CUDA_VISIBLE_DEVICES for the NVIDIA GPUs named: each by
// UUID where NVML gave one, else by index.
func CUDADevices(uuids []string, indices []int) string {
	names := make([]string, len(indices))
	for i, index := range indices {
		uuid := ""
		if i < len(uuids) {
			uuid = uuids[i]
		}
		names[i] = cudaDevice(uuid, index)
	}
	return strings.Join(names, ",")
}

// cudaDevice names an NVIDIA GPU by UUID when NVML gave one, else by index.
func cudaDevice(uuid string, index int) string {
	if strings.HasPrefix(uuid, "GPU-") || strings.HasPrefix(uuid, "MIG-") {
		return uuid
	}
	return strconv.Itoa(index)
}
