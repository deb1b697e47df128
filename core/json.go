package core

import (
	"time"

	"github.com/chronos-gpu/chronos/storage"
)

// PartitionJSON is a booking as `chronos list --json` prints it. The field
// names are a stable interface for scripts: add fields, never rename them.
type PartitionJSON struct {
	ID uint64 `json:"id"`
	// Host is the machine whose GPU is booked, in a ledger many hosts
	// share (absent in a host's own ledger file).
	Host             string        `json:"host,omitempty"`
	Device           int           `json:"device"`
	DeviceUUID       string        `json:"device_uuid,omitempty"`
	Owner            string        `json:"owner"`
	UID              int           `json:"uid"`
	Share            float64       `json:"share"` // fraction of the device's memory, 0..1
	Bytes            uint64        `json:"bytes"`
	ComputePercent   int           `json:"compute_percent,omitempty"`
	Created          time.Time     `json:"created"`
	Expires          time.Time     `json:"expires"`
	RemainingSeconds float64       `json:"remaining_seconds"`
	State            BookingStatus `json:"state"`
	// GPUGone: the booking's GPU is no longer in the machine's inventory.
	GPUGone bool `json:"gpu_gone,omitempty"`
}

// JSON returns the booking in its script-facing form, as seen at now.
func JSON(p storage.Partition, now time.Time, warnLead time.Duration) PartitionJSON {
	remaining := 0.0
	if p.LiveAt(now) {
		remaining = p.Expires.Sub(now).Seconds()
	}
	return PartitionJSON{
		ID: p.ID, Host: p.Host, Device: p.Device, DeviceUUID: p.DeviceUUID, Owner: p.User, UID: p.UID,
		Share: float64(p.SharePPM) / ppm, Bytes: p.Bytes, ComputePercent: p.ComputePct,
		Created: p.Created.UTC(), Expires: p.Expires.UTC(), RemainingSeconds: remaining,
		State: Status(p, now, warnLead),
	}
}

// JSON returns the booking in its script-facing form, as seen at now.
func (p Partition) JSON(now time.Time, warnLead time.Duration) PartitionJSON {
	j := JSON(p.Partition, now, warnLead)
	j.GPUGone = p.GPUGone
	return j
}
