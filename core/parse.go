package core

import (
	"github.com/chronos-gpu/chronos/core/human"
)

// ParseRequest reads a booking as a person types it — GPU (or GPUs)
// MEMORY DURATION and an optional compute cap — for every command that
// books.
func ParseRequest(device, memory, duration, compute string) (Request, error) {
	var r Request
	var err error
	var devices []int
	if r.Host, devices, err = human.ParseGPUs(device); err != nil {
		return r, err
	}
	r.Device = devices[0]
	if len(devices) > 1 {
		r.Devices = devices
	}
	if r.Memory, err = human.ParseMemory(memory); err != nil {
		return r, err
	}
	if r.Duration, err = human.ParseDuration(duration); err != nil {
		return r, err
	}
	r.Compute, err = human.ParseCompute(compute)
	return r, err
}
