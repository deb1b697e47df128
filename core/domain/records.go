package domain

import (
	"slices"
	"time"
)

// State is where a partition is in its life. A partition stored as Live whose
// deadline has passed is not live: time is the truth, and Partition.LiveAt
// says so whether or not a monitor has flipped the state yet.
type State string

const (
	Live     State = "live"
	Released State = "released"
	Expired  State = "expired"
)

// Partition is one booking of a share of one or more GPUs of one host for
// a bounded time: the same share of each, from one start to one end.
type Partition struct {
	V  int    `json:"v"`
	ID uint64 `json:"id"`
	// Host is the machine whose GPU is booked, in a ledger many hosts
	// share; empty in a host's own ledger file.
	Host string `json:"host,omitempty"`
	// Device is the booked GPU, the first of them when there are several.
	Device     int    `json:"device"`
	DeviceUUID string `json:"device_uuid,omitempty"`
	// Devices are every GPU of a booking of several, in order, Device
	// first; DeviceUUIDs theirs. A booking of one GPU leaves both empty,
	// as every booking stored before bookings spanned GPUs does.
	Devices     []int    `json:"devices,omitempty"`
	DeviceUUIDs []string `json:"device_uuids,omitempty"`
	// Placement says why these GPUs, when the booking asked for any
	// several: how they are linked.
	Placement string `json:"placement,omitempty"`
	// SharePPM is the booked share of each GPU's memory in parts per
	// million, so that admission adds integers and never rounds its way past
	// 100%; Bytes what it stands for on each.
	SharePPM   int64     `json:"share_ppm"`
	Bytes      uint64    `json:"bytes"`
	ComputePct int       `json:"compute_percent,omitempty"`
	UID        int       `json:"uid"`
	User       string    `json:"user"`
	Created    time.Time `json:"created"`
	// Start is when the booking begins to hold its share: Created for a
	// booking made for now, later for one made ahead (--at). A record
	// written before bookings had a start reads Start = Created.
	Start   time.Time `json:"start,omitzero"`
	Expires time.Time `json:"expires"`
	State   State     `json:"state"`
	Ended   time.Time `json:"ended,omitzero"`
	Warned  bool      `json:"warned,omitempty"`
	// Request is the waiting request this booking was granted for (0: it
	// was booked directly).
	Request uint64 `json:"request,omitempty"`
	// Wrapper is the `chronos run` that made the booking and releases it
	// when its command ends; nil for a booking made otherwise.
	Wrapper *Wrapper `json:"wrapper,omitempty"`
	// Orphaned is when a monitor found the wrapper gone while its command
	// still ran; the booking is released once nothing of it runs.
	Orphaned time.Time `json:"orphaned,omitzero"`
	// NoticesDismissed is the newest notice about the booking (an event's
	// sequence number) its owner dismissed: every app of theirs stops
	// showing it and the older ones.
	NoticesDismissed uint64 `json:"notices_dismissed,omitempty"`
}

// Process names one process of one machine, so that a process on the same
// machine (only there do pids mean the same processes) can tell whether it
// still runs.
type Process struct {
	Host string `json:"host"`
	// Boot and PIDNamespace say which boot of the host, and which pid
	// namespace, the pid belongs to.
	Boot         string `json:"boot"`
	PIDNamespace string `json:"pid_namespace"`
	PID          int    `json:"pid"`
	// Start is the process's start time (clock ticks since boot): with the
	// pid, it names one process even when pids are reused.
	Start uint64 `json:"start_ticks"`
}

// Wrapper names one `chronos run` process, and the process group of the
// command it started, so that a monitor on the same machine can tell when
// the wrapper died without releasing its booking.
type Wrapper struct {
	Process
	// Group is the command's process group; 0 until it started.
	Group int `json:"group,omitempty"`
}

// GPUs are the indices of the GPUs the booking holds, Device first.
func (p Partition) GPUs() []int {
	if len(p.Devices) > 0 {
		return p.Devices
	}
	return []int{p.Device}
}

// UUIDs are the UUIDs of the GPUs the booking holds, in GPUs' order.
func (p Partition) UUIDs() []string {
	if len(p.Devices) == 0 {
		return []string{p.DeviceUUID}
	}
	out := make([]string, len(p.Devices)) // as many as GPUs, even in a damaged record
	copy(out, p.DeviceUUIDs)
	return out
}

// TotalPPM is what the booking holds on all its GPUs together, in parts
// per million of a GPU: what quotas, fair share and reports count.
func (p Partition) TotalPPM() int64 { return p.SharePPM * int64(len(p.GPUs())) }

// On is the booking as it stands on one of its GPUs, device: a booking of
// that GPU alone.
func (p Partition) On(device int) Partition {
	q := p
	q.Device, q.Devices, q.DeviceUUIDs = device, nil, nil
	if i := slices.Index(p.Devices, device); i >= 0 && i < len(p.DeviceUUIDs) {
		q.DeviceUUID = p.DeviceUUIDs[i]
	}
	return q
}

// Holds reports whether the booking is on GPU device of its host.
func (p Partition) Holds(device int) bool {
	return slices.Contains(p.GPUs(), device)
}

// LiveAt reports whether the partition holds its share at instant now:
// stored as live, started, and not past its deadline.
func (p Partition) LiveAt(now time.Time) bool {
	return p.State == Live && !now.Before(p.Start) && now.Before(p.Expires)
}

// Upcoming reports whether the partition is booked ahead and has not
// started at instant now.
func (p Partition) Upcoming(now time.Time) bool {
	return p.State == Live && now.Before(p.Start)
}

// ReclaimedEarly reports whether the booking was ended before its deadline
// for sitting idle: stored as expired, with its deadline kept and its
// end (Ended) earlier. A booking that ran out its time ends at its
// deadline.
func (p Partition) ReclaimedEarly() bool {
	return p.State == Expired && !p.Ended.IsZero() && p.Ended.Before(p.Expires)
}

// End is when the partition stopped holding its share: its deadline, or
// before it when it was released or reclaimed.
func (p Partition) End() time.Time {
	if !p.Ended.IsZero() && p.Ended.Before(p.Expires) {
		return p.Ended
	}
	return p.Expires
}

// EndedAt reports whether the partition no longer holds, nor will hold,
// its share at instant now: released, expired, or past its deadline.
func (p Partition) EndedAt(now time.Time) bool {
	return p.State != Live || !now.Before(p.Expires)
}

// Remaining is how long the partition has left at now: zero once it has
// ended, its whole length while it has not started.
func (p Partition) Remaining(now time.Time) time.Duration {
	if p.EndedAt(now) {
		return 0
	}
	from := now
	if p.Start.After(now) {
		from = p.Start
	}
	return p.Expires.Sub(from)
}

// FillDefaults fills in what a partition stored before bookings had a
// start lacks: it started when it was made.
func (p *Partition) FillDefaults() {
	if p.Start.IsZero() {
		p.Start = p.Created
	}
}

// Policy is what the admin chose the monitor should do, and the rules of
// fair sharing: quotas and the waiting line's order.
type Policy struct {
	Expiry     string        `json:"expiry"`      // "terminate" or "notify"
	OverBudget string        `json:"over_budget"` // "off", "warn" or "terminate"
	Unbooked   string        `json:"unbooked"`    // "off", "warn" or "terminate"
	Grace      time.Duration `json:"grace"`
	WarnLead   time.Duration `json:"warn_lead"`
	MaxLength  time.Duration `json:"max_length"`
	// Admit is what admission counts: "booked" shares only, or also the
	// memory "physical"ly in use ("" reads as booked).
	Admit string `json:"admit,omitempty"`
	// The idle ladder. Idle is zero in a policy stored before it existed;
	// the ladder's defaults then apply.
	Reclaim   string          `json:"reclaim,omitempty"` // "off", "when-waiting" or "always"
	Idle      time.Duration   `json:"idle,omitempty"`
	IdleWarn  []time.Duration `json:"idle_warn,omitempty"`
	IdleSM    int             `json:"idle_sm,omitempty"` // percent
	IdleStart time.Duration   `json:"idle_start,omitempty"`
	HoldMax   time.Duration   `json:"hold_max,omitempty"`
	// NotifyURL receives every notice as a Slack-compatible JSON POST.
	NotifyURL string `json:"notify_url,omitempty"`
	// MPSUserDirs are the pipe directories where a user's own MPS daemon
	// is trusted to hold that user's bookings to their memory.
	MPSUserDirs []string `json:"mps_user_dirs,omitempty"`

	// Quotas; nil is no limit, and zero a limit of nothing (a policy
	// stored before a zero limit could be set never wrote a zero).
	UserGPUs    *float64      `json:"user_gpus,omitempty"`    // GPU-equivalents a user holds at once
	UserHours   *float64      `json:"user_hours,omitempty"`   // share-weighted GPU-hours in any HoursWindow
	HoursWindow time.Duration `json:"hours_window,omitempty"` // the rolling window of UserHours
	Ahead       time.Duration `json:"ahead"`                  // how far ahead a booking may start
	// The line's order. A policy stored before these existed has a zero
	// HalfLife, and reads with the defaults.
	HalfLife  time.Duration `json:"half_life"`
	AgeWeight float64       `json:"age_weight"`
	MaxAge    time.Duration `json:"max_age"`
	// Overrides are per-user ("alice") or per-group ("@students")
	// settings, in the form `chronos policy set` reads them.
	Overrides []Override `json:"overrides,omitempty"`
}

// Override is the settings that apply to one user or group instead of
// the policy's own: key to value, as typed ("user-gpus" -> "4").
type Override struct {
	For      string            `json:"for"`
	Settings map[string]string `json:"settings"`
}
