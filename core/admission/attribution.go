package admission

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// Verdict is what a GPU process is, measured against the bookings.
type Verdict string

const (
	// Booked: the process counts against a live booking within its memory.
	Booked Verdict = "booked"
	// Unbooked: no live booking of its owner, or named by it, on its GPU.
	Unbooked Verdict = "unbooked"
	// OverBudget: its booking's processes together use more memory than
	// the booking holds.
	OverBudget Verdict = "over budget"
	// Ended: it was started inside a booking that has since ended.
	Ended Verdict = "ended"
	// MPSServer: the MPS server, which runs every client's work on the GPU.
	// It belongs to no booking and is never signalled: stopping it would
	// stop every user's job at once.
	MPSServer Verdict = "mps server"
)

// Attribution is one GPU process and the booking it counts against.
type Attribution struct {
	gpu.Process
	Device    int    `json:"device"`
	Partition uint64 `json:"partition,omitempty"`
	// Claimed is the booking the process's environment names when the
	// process is not its owner's (nor root's): anyone can set the variable,
	// so the claim is ignored, and shown.
	Claimed uint64  `json:"claimed,omitempty"`
	Verdict Verdict `json:"verdict"`
}

// MarshalJSON adds booking and booking_id, the names people read, beside
// partition and partition_id, their old names, kept for old scripts.
func (a Attribution) MarshalJSON() ([]byte, error) {
	type fields Attribution // without this method
	return json.Marshal(struct {
		fields
		Booking   uint64 `json:"booking,omitempty"`
		BookingID string `json:"booking_id,omitempty"`
	}{fields(a), a.Partition, a.PartitionID})
}

// Attribute matches every process in the sample to a booking: the one named
// by CHRONOS_BOOKING_ID (or CHRONOS_PARTITION_ID) in its environment (set by
// `chronos run`, inherited by children) when the process belongs to that
// booking's owner or to root, else its owner's live booking on that GPU,
// else the owner's expired booking on that GPU that the process started
// under. Processes of one booking share its memory budget.
func Attribute(s gpu.Sample, parts []domain.Partition, now time.Time) []Attribution {
	return attribute(s, claimants(s, parts, now), now)
}

// claimants are the bookings of parts that may claim a process of s at now,
// in order: those a process names, and its owner's that are live or that
// ended after the owner's oldest process started. The others cannot change
// an attribution, and a monitor's snapshot holds the bookings of a whole
// day (AttributionWindow), which it weighs on every pass and at every
// deadline it watches.
func claimants(s gpu.Sample, parts []domain.Partition, now time.Time) []domain.Partition {
	named := map[uint64]bool{}
	owners := map[int]time.Time{} // by uid: the start of their oldest process, zero if none is known
	for _, d := range s.Devices {
		for _, proc := range d.Processes {
			if proc.MPSServer {
				continue
			}
			if id, err := strconv.ParseUint(proc.PartitionID, 10, 64); err == nil {
				named[id] = true
			}
			if proc.UID == procfs.NA {
				continue
			}
			started, oldest := procfs.StartedAt(proc.StartTime), owners[proc.UID]
			if _, seen := owners[proc.UID]; !seen || !started.IsZero() && (oldest.IsZero() || started.Before(oldest)) {
				owners[proc.UID] = started
			}
		}
	}
	var out []domain.Partition
	for _, p := range parts {
		oldest, owner := owners[p.UID]
		if named[p.ID] || owner && (p.LiveAt(now) || !oldest.IsZero() && oldest.Before(p.End())) {
			out = append(out, p)
		}
	}
	return out
}

// attribute is Attribute over every booking of parts.
func attribute(s gpu.Sample, parts []domain.Partition, now time.Time) []Attribution {
	byID := make(map[uint64]domain.Partition, len(parts))
	for _, p := range parts {
		byID[p.ID] = p
	}
	var out []Attribution
	// A booking's budget is its bytes on each of its GPUs.
	type onGPU struct {
		id     uint64
		device int
	}
	used := map[onGPU]uint64{}
	for _, d := range s.Devices {
		for _, proc := range d.Processes {
			if proc.MPSServer {
				out = append(out, Attribution{Process: proc, Device: d.Index, Verdict: MPSServer})
				continue
			}
			a := Attribution{Process: proc, Device: d.Index, Verdict: Unbooked}
			if id, err := strconv.ParseUint(proc.PartitionID, 10, 64); err == nil {
				switch p, ok := byID[id]; {
				case !ok || !p.Holds(d.Index):
				case p.Upcoming(now):
					// A process naming a booking that has not started
					// runs on no booking: unbooked.
				case proc.UID != p.UID && proc.UID != 0:
					a.Claimed = id
				default:
					a.Partition = id
					if !p.LiveAt(now) {
						a.Verdict = Ended
					}
				}
			}
			if a.Partition == 0 && proc.UID != procfs.NA {
				if p, ok := ownersBooking(parts, proc.UID, d.Index, now); ok {
					a.Partition = p.ID
				} else if p, ok := ownersExpiredBooking(parts, proc, d.Index, now); ok {
					a.Partition, a.Verdict = p.ID, Ended
				}
			}
			if a.Partition != 0 && a.Verdict != Ended {
				a.Verdict = Booked
				used[onGPU{a.Partition, d.Index}] += proc.MemoryUsed
			}
			out = append(out, a)
		}
	}
	for i, a := range out {
		// A booking of no bytes is on a GPU whose size the driver does not
		// report (Intel): it has no budget to be over.
		if b := byID[a.Partition].Bytes; a.Verdict == Booked && b > 0 && used[onGPU{a.Partition, a.Device}] > b {
			out[i].Verdict = OverBudget
		}
	}
	return out
}

// ownersBooking is uid's live booking on device: the one ending last, as the
// one most likely to cover a process that has just started.
func ownersBooking(parts []domain.Partition, uid, device int, now time.Time) (domain.Partition, bool) {
	var best domain.Partition
	found := false
	for _, p := range parts {
		if p.UID == uid && p.Holds(device) && p.LiveAt(now) && (!found || p.Expires.After(best.Expires)) {
			best, found = p, true
		}
	}
	return best, found
}

// ownersExpiredBooking is the expired booking of proc's owner on device that
// was live when proc started: the process ran under it and outlived it. A
// process started after its owner's booking ended is unbooked instead.
func ownersExpiredBooking(parts []domain.Partition, proc gpu.Process, device int, now time.Time) (domain.Partition, bool) {
	started := procfs.StartedAt(proc.StartTime)
	if started.IsZero() {
		return domain.Partition{}, false
	}
	var best domain.Partition
	found := false
	for _, p := range parts {
		if p.UID != proc.UID || !p.Holds(device) || p.State == domain.Released {
			continue
		}
		// Expired, or past its deadline and not flipped yet; one live or
		// still to start has not ended.
		if p.State != domain.Expired && (p.State != domain.Live || now.Before(p.Expires)) {
			continue
		}
		if started.Before(p.End()) && (!found || p.End().After(best.End())) {
			best, found = p, true
		}
	}
	return best, found
}

// AttributionWindow is how long after its end an expired booking can still
// claim the processes that ran under it.
const AttributionWindow = 24 * time.Hour
