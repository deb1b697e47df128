// Package view is what the commands print, made from the service's
// answers: the shapes `--json` prints, in one place, and the text tables
// and lines (list, stats, show, events, report). The JSON field names are
// a stable interface for scripts: add fields, never rename or remove
// them. (What a Client call returns as it is, Stats or Report, is its
// package's.) The app uses its countdowns.
package view

import (
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// PartitionJSON is a booking as `chronos list --json` and `create --json`
// print it.
type PartitionJSON struct {
	ID uint64 `json:"id"`
	// Host is the machine whose GPU is booked, in a ledger many hosts
	// share (absent in a host's own ledger file).
	Host       string `json:"host,omitempty"`
	Device     int    `json:"device"`
	DeviceUUID string `json:"device_uuid,omitempty"`
	// Devices are all the GPUs of a booking of several, device first;
	// DeviceUUIDs theirs. Absent for a booking of one GPU.
	Devices        []int     `json:"devices,omitempty"`
	DeviceUUIDs    []string  `json:"device_uuids,omitempty"`
	Placement      string    `json:"placement,omitempty"` // why those GPUs, for any several
	Owner          string    `json:"owner"`
	UID            int       `json:"uid"`
	Share          float64   `json:"share"` // fraction of the device's memory, 0..1
	Bytes          uint64    `json:"bytes"`
	ComputePercent int       `json:"compute_percent,omitempty"`
	Created        time.Time `json:"created"`
	Start          time.Time `json:"start"`
	Expires        time.Time `json:"expires"`
	// Ended is when an ended booking stopped holding its share: its
	// deadline, or earlier when released or reclaimed.
	Ended            time.Time            `json:"ended,omitzero"`
	RemainingSeconds float64              `json:"remaining_seconds"`
	State            domain.BookingStatus `json:"state"`
	// GPUGone: the booking's GPU is no longer in the machine's inventory.
	GPUGone bool `json:"gpu_gone,omitempty"`
	// Idle says monitors see the booking doing no GPU work now, for
	// IdleSeconds; Usage is what they measured of it all along.
	Idle        bool       `json:"idle"`
	IdleSeconds float64    `json:"idle_seconds"`
	Usage       *UsageJSON `json:"usage,omitempty"`
}

// UsageJSON is what monitors measured of a booking, as --json prints it.
type UsageJSON struct {
	IdleSeconds    float64   `json:"idle_seconds"` // all the time it was seen idle
	GPUSeconds     float64   `json:"gpu_seconds"`  // GPU time its processes used
	MemoryPeak     uint64    `json:"memory_peak_bytes"`
	LastActive     time.Time `json:"last_active,omitzero"`
	IdleWarnings   int       `json:"idle_warnings,omitempty"` // in the current idle stretch
	HeldUntil      time.Time `json:"held_until,omitzero"`
	HoldReason     string    `json:"hold_reason,omitempty"`
	Holds          int       `json:"holds,omitempty"`
	Reclaimed      time.Time `json:"reclaimed,omitzero"`
	AccountedUntil time.Time `json:"accounted_until"`
}

// endedUTC is an ended booking's end, in UTC; zero while it holds its share.
func endedUTC(p domain.Partition, now time.Time) time.Time {
	if !p.EndedAt(now) {
		return time.Time{}
	}
	return p.End().UTC()
}

// Partition returns the booking in its script-facing form, as seen at now.
func Partition(p domain.Partition, now time.Time, warnLead time.Duration) PartitionJSON {
	return PartitionJSON{
		ID: p.ID, Host: p.Host, Device: p.Device, DeviceUUID: p.DeviceUUID, Devices: p.Devices, DeviceUUIDs: p.DeviceUUIDs, Placement: p.Placement, Owner: p.User, UID: p.UID,
		Share: human.ShareOf(p.SharePPM), Bytes: p.Bytes, ComputePercent: p.ComputePct,
		Created: p.Created.UTC(), Start: p.Start.UTC(), Expires: p.Expires.UTC(), RemainingSeconds: p.Remaining(now).Seconds(),
		State: domain.Status(p, now, warnLead), Ended: endedUTC(p, now),
	}
}

// Booking is the booking in its script-facing form with what is known of it
// beside its record (its GPU gone, what monitors measured), as seen at now.
func Booking(p core.Partition, now time.Time, warnLead time.Duration) PartitionJSON {
	j := Partition(p.Partition, now, warnLead)
	j.State, j.GPUGone = p.BaseStatus(now, warnLead), p.GPUGone
	idle := domain.IdleFor(p.Partition, p.Usage, now)
	j.Idle, j.IdleSeconds = idle > 0, idle.Seconds()
	if u := p.Usage; !u.Through.IsZero() || u.Holds > 0 {
		j.Usage = &UsageJSON{IdleSeconds: u.Idle.Seconds(), GPUSeconds: u.GPUTime.Seconds(), MemoryPeak: u.MemoryPeak,
			LastActive: utc(u.LastActive), IdleWarnings: u.Warnings, HeldUntil: utc(u.HeldUntil), HoldReason: u.HoldReason,
			Holds: u.Holds, Reclaimed: utc(u.Reclaimed), AccountedUntil: utc(u.Through)}
	}
	return j
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// QueueJSON is a waiting request as `chronos queue --json` prints it: a
// stable interface for scripts, like PartitionJSON.
type QueueJSON struct {
	ID              uint64    `json:"id"`
	Position        int       `json:"position"` // 1 is next; 0: leaving or starting at the next placement
	Owner           string    `json:"owner"`
	UID             int       `json:"uid"`
	Host            string    `json:"host,omitempty"`    // as in PartitionJSON
	Device          *int      `json:"device"`            // null: any GPU of the host
	Devices         []int     `json:"devices,omitempty"` // the GPUs named, for several
	GPUs            int       `json:"gpus,omitempty"`    // how many of any GPUs, for several
	Share           float64   `json:"share,omitempty"`
	Bytes           uint64    `json:"bytes,omitempty"`
	DurationSeconds float64   `json:"duration_seconds"`
	ComputePercent  int       `json:"compute_percent,omitempty"`
	Created         time.Time `json:"created"`
	NotBefore       time.Time `json:"not_before,omitzero"`
	Deadline        time.Time `json:"deadline,omitzero"`
	WaitedSeconds   float64   `json:"waited_seconds"`
	FairShare       float64   `json:"fair_share"`
	Priority        float64   `json:"priority"`
	ETA             time.Time `json:"eta,omitzero"`
	ETADevice       int       `json:"eta_device"`
	ETADevices      []int     `json:"eta_devices,omitempty"` // for several: the GPUs kept for it from its ETA
	Placement       string    `json:"placement,omitempty"`   // for any several: why those GPUs
	Reason          string    `json:"reason"`
}

// QueueEntry returns a waiting request in its script-facing form.
func QueueEntry(e admission.QueueEntry, now time.Time) QueueJSON {
	out := QueueJSON{ID: e.ID, Position: e.Position, Owner: e.User, UID: e.UID, Host: e.Host, Share: float64(e.SharePPM) / human.Ppm, Bytes: e.Bytes,
		DurationSeconds: e.Duration.Seconds(), ComputePercent: e.ComputePct, Created: e.Created.UTC(), NotBefore: e.NotBefore.UTC(),
		Deadline: e.Deadline.UTC(), WaitedSeconds: now.Sub(e.Created).Seconds(), FairShare: e.Factor, Priority: e.Priority,
		ETA: e.ETA.UTC(), ETADevice: e.ETADevice, ETADevices: e.ETADevices, Placement: e.Placement, Reason: e.Reason,
		Devices: e.Devices, GPUs: e.Count}
	if e.Device != domain.AnyDevice {
		d := e.Device
		out.Device = &d
	}
	return out
}

// AvailableJSON is one GPU as `chronos available --json` prints it.
type AvailableJSON struct {
	// Host is the GPU's host when it is another host's (see PartitionJSON).
	Host      string  `json:"host,omitempty"`
	Device    int     `json:"device"`
	Free      float64 `json:"free"` // fraction of the device's memory, 0..1
	FreeBytes uint64  `json:"free_bytes"`
	Bookings  int     `json:"bookings"`
}

// Available returns the availability in its script-facing form.
func Available(a core.Availability) AvailableJSON {
	return AvailableJSON{Host: a.Host, Device: a.Device.Index, Free: human.ShareOf(a.FreePPM), FreeBytes: a.FreeBytes, Bookings: a.Bookings}
}

// EventJSON is one audit event as `chronos events --json` prints it: the
// stored event, with the booking's id also under the name people read.
type EventJSON struct {
	domain.Event
	Booking uint64 `json:"booking,omitempty"`
}

// Events returns events in their script-facing form.
func Events(evs []domain.Event) []EventJSON {
	out := make([]EventJSON, len(evs))
	for i, e := range evs {
		out[i] = EventJSON{Event: e, Booking: e.Partition}
	}
	return out
}

// BackendsJSON is `chronos backends --json`: what this machine supports,
// as the original's check_concurrent_support() answered.
type BackendsJSON struct {
	NVMLAvailable      bool        `json:"nvml_available"`
	NVMLDetail         string      `json:"nvml_detail"`
	Driver             string      `json:"driver,omitempty"`
	GPUs               int         `json:"gpus"`
	DRMAvailable       bool        `json:"drm_available"`
	DRMDetail          string      `json:"drm_detail"`
	MPSRunning         bool        `json:"mps_running"`
	MPSMultiUser       bool        `json:"mps_multi_user"`
	MPSPipeDir         string      `json:"mps_pipe_dir"`
	MPSDetail          string      `json:"mps_detail,omitempty"`
	ConcurrentPossible bool        `json:"concurrent_possible"`
	Recommended        string      `json:"recommended"`
	ActiveBackend      string      `json:"active_backend"`
	Mode               procfs.Mode `json:"mode"`
	// On a ledger many hosts share: the other hosts, and clocks more than
	// SkewWarning from this host's.
	Hosts         []HostJSON `json:"hosts,omitempty"`
	ClockWarnings []string   `json:"clock_warnings,omitempty"`
}

// HostJSON is another host of a shared ledger as `chronos backends --json`
// prints it.
type HostJSON struct {
	Host string `json:"host"`
	// Live: a monitor of the host is publishing its status.
	Live bool `json:"live"`
	GPUs int  `json:"gpus"`
	// SkewSeconds is its clock minus this host's, when measured.
	SkewSeconds *float64 `json:"skew_seconds,omitempty"`
}

// Host returns the host in its script-facing form.
func Host(h core.HostView) HostJSON {
	out := HostJSON{Host: h.Host, Live: h.Live(), GPUs: len(h.Inventory.Devices)}
	if h.SkewKnown {
		s := h.Skew.Seconds()
		out.SkewSeconds = &s
	}
	return out
}

// BookingJSON is `chronos show ID --json`: the booking as `list --json`
// prints it, the GPU processes that count against it now, and its events.
type BookingJSON struct {
	PartitionJSON
	Processes []admission.Attribution `json:"processes"`
	Events    []EventJSON             `json:"events"`
}
