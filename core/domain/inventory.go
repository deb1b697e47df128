package domain

import (
	"encoding/json"
	"time"
)

// Device is one GPU of the cached inventory.
type Device struct {
	Index       int    `json:"index"`
	UUID        string `json:"uuid"`
	Name        string `json:"name"`
	MemoryTotal uint64 `json:"memory_total_bytes"`
}

// Inventory is the device list last seen by a process that opened a GPU
// backend, kept so that `create` can validate a device without paying for
// NVML's start. It says which backend, on which host, wrote it.
type Inventory struct {
	Backend string    `json:"backend"`
	Host    string    `json:"host,omitempty"`
	Updated time.Time `json:"updated"`
	Devices []Device  `json:"devices"`
	// Topology is how the GPUs are linked, as package gpu writes it
	// (gpu.Topology's JSON), for placing a booking of several GPUs from
	// any host; absent when it was never read.
	Topology json.RawMessage `json:"topology,omitempty"`
}

// DeviceReading is the latest compact reading of one GPU's memory, stored
// by the processes that sample the GPUs anyway (monitors, the app, stats),
// so that `create` can say what is physically free without starting NVML.
// Each GPU's is a record of its own: create decodes only the one it books.
type DeviceReading struct {
	Time        time.Time `json:"time"`
	Backend     string    `json:"backend"`
	Index       int       `json:"index"`
	UUID        string    `json:"uuid"`
	MemoryTotal uint64    `json:"memory_total_bytes"`
	MemoryUsed  uint64    `json:"memory_used_bytes"`
	// Holders are the largest users of the memory, largest first.
	Holders []Holder `json:"holders,omitempty"`
}

// Holder is the memory one user's processes use on a GPU under one live
// booking (Partition 0: under none).
type Holder struct {
	User      string `json:"user"`
	UID       int    `json:"uid"`
	Partition uint64 `json:"partition,omitempty"`
	Bytes     uint64 `json:"bytes"`
	// PIDs are the largest of the processes, largest first.
	PIDs []int `json:"pids"`
}
