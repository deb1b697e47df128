package domain

import (
	"slices"
	"time"
)

// RequestState is where a request in the waiting line is.
type RequestState string

// The states of a request. Only Waiting requests are in the line; the
// others say how it left.
const (
	Waiting   RequestState = "waiting"
	Granted   RequestState = "granted"
	Cancelled RequestState = "cancelled"
	TimedOut  RequestState = "timed out"
)

// AnyDevice in a request means whichever GPU has room first.
const AnyDevice = -1

// Request is an ask for a booking that did not fit when it was made and
// waits in line until it does.
type Request struct {
	V  int    `json:"v"`
	ID uint64 `json:"id"`
	// Host is the machine whose GPU is asked for, as in Partition (empty
	// in a host's own ledger file); Device its index, or AnyDevice for the
	// first of its GPUs with room.
	Host   string `json:"host,omitempty"`
	Device int    `json:"device"`
	// Devices are the GPUs asked of a booking of several named ones
	// (0-3), Device the first; Count how many are asked of any GPUs
	// (any --gpus 4), Device then AnyDevice. Both empty: one GPU.
	Devices []int `json:"devices,omitempty"`
	Count   int   `json:"gpus,omitempty"`
	// The memory asked: a share of the GPU in parts per million, or a size.
	SharePPM   int64         `json:"share_ppm,omitempty"`
	Bytes      uint64        `json:"bytes,omitempty"`
	Duration   time.Duration `json:"duration"`
	ComputePct int           `json:"compute_percent,omitempty"`
	UID        int           `json:"uid"`
	User       string        `json:"user"`
	// NotBefore is the earliest start asked (--at); zero: as soon as it fits.
	NotBefore time.Time `json:"not_before,omitzero"`
	Created   time.Time `json:"created"`
	// Deadline is when it leaves the line unbooked (--timeout); zero: never.
	Deadline time.Time `json:"deadline,omitzero"`
	// Waiter is the waiting process, which may run on another host than
	// the GPU's: when it is gone, the request leaves the line. PID 0: none.
	Waiter Process `json:"waiter,omitzero"`

	State     RequestState `json:"state"`
	Partition uint64       `json:"partition,omitempty"` // the booking it got
	Ended     time.Time    `json:"ended,omitzero"`      // when it left the line
	Reason    string       `json:"reason,omitempty"`    // why it left without a booking
}

// Wants reports whether r could start on GPU device of its host: the one
// it names, one of those, or any.
func (r Request) Wants(device int) bool {
	return r.Device == AnyDevice || r.Device == device || slices.Contains(r.Devices, device)
}

// GPUCount is how many GPUs r asks for.
func (r Request) GPUCount() int {
	return max(1, len(r.Devices), r.Count)
}

// UserUsage is one user's use of the GPUs, decayed: GPU-seconds (a 50%
// booking held an hour is 1,800) as of At. Fair-share order reads it.
type UserUsage struct {
	UID        int       `json:"uid"`
	User       string    `json:"user"`
	GPUSeconds float64   `json:"gpu_seconds"`
	At         time.Time `json:"at"`
}

// Held is one interval an ended booking held its share, in parts per
// million of its GPU: what hours quotas and usage reports look back on.
// They are kept by user and end, so a look back reads only its window.
type Held struct {
	Partition uint64
	Start     time.Time
	End       time.Time
	SharePPM  int64
}
