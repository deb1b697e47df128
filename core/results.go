package core

import (
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// Stats is one reading of the GPUs set against the bookings: what
// `chronos stats` prints (--json as it is) and the app shows.
type Stats struct {
	Sample    gpu.Sample              `json:"sample"`
	Mode      procfs.Mode             `json:"mode"`
	Booked    map[int]DeviceBooking   `json:"booked"`
	Processes []admission.Attribution `json:"processes"`
}

// DeviceBooking is how much of one device live bookings hold.
type DeviceBooking struct {
	PPM   int64  `json:"share_ppm"`
	Bytes uint64 `json:"bytes"`
	Count int    `json:"bookings"`
}
