package admission

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
)

// Admission counts booked shares: time is the truth, and no GPU needs to be
// read to book. What the memory physically holds comes from the latest
// reading that the processes which sample the GPUs anyway (every monitor,
// every app, `chronos stats`) keep in the ledger: `create` reads it in its
// own transaction and never starts NVML (~12 ms) to learn it. A reading is
// stored only when it changed materially, at most every readingMinGap, and
// again every readingHeartbeat while nothing changes, so that a reader can
// tell a current reading from one nobody renews; past ReadingFreshFor it is
// not trusted and the physical figure is unknown.
const (
	ReadingMinGap    = 5 * time.Second
	ReadingHeartbeat = time.Minute
	// ReadingFreshFor is how old a stored GPU reading may be and still be
	// shown as what is physically free.
	ReadingFreshFor = 150 * time.Second
	// ReadingHolders bounds the holders kept per GPU, and readingPIDs the
	// pids kept per holder: a reading stays a few hundred bytes.
	ReadingHolders = 4
	readingPIDs    = 3
)

// PhysicalMemory is what one GPU's memory physically held at the last
// fresh reading. Known is false when there is none.
type PhysicalMemory struct {
	Known bool
	// Age is how old the reading was when it was read from the ledger.
	Age               time.Duration
	Total, Used, Free uint64
	Holders           []domain.Holder
}

// ReadingOf is the compact form of a sample that the ledger keeps: per GPU,
// the memory used and who uses the most of it.
func ReadingOf(s gpu.Sample, atts []Attribution, now time.Time) []domain.DeviceReading {
	var out []domain.DeviceReading
	for _, d := range s.Devices {
		r := domain.DeviceReading{Time: now, Backend: s.Backend, Index: d.Index, UUID: d.UUID, MemoryTotal: d.MemoryTotal, MemoryUsed: d.MemoryUsed}
		type key struct {
			uid       int
			user      string
			partition uint64
		}
		held := map[key]*domain.Holder{}
		var procs []Attribution
		for _, a := range atts {
			if a.Device == d.Index {
				procs = append(procs, a)
			}
		}
		slices.SortStableFunc(procs, func(a, b Attribution) int { return cmp.Compare(b.MemoryUsed, a.MemoryUsed) })
		for _, a := range procs {
			k := key{a.UID, a.User, 0}
			if a.Verdict == Booked || a.Verdict == OverBudget {
				k.partition = a.Partition
			}
			h := held[k]
			if h == nil {
				h = &domain.Holder{User: a.User, UID: a.UID, Partition: k.partition}
				held[k] = h
			}
			h.Bytes += a.MemoryUsed
			if len(h.PIDs) < readingPIDs {
				h.PIDs = append(h.PIDs, a.PID)
			}
		}
		for _, h := range held {
			r.Holders = append(r.Holders, *h)
		}
		slices.SortFunc(r.Holders, func(a, b domain.Holder) int {
			return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.User, b.User), cmp.Compare(a.Partition, b.Partition))
		})
		r.Holders = r.Holders[:min(len(r.Holders), ReadingHolders)]
		out = append(out, r)
	}
	return out
}

// ReadingDue says whether fresh readings should replace the stored ones:
// there are none, they are from another backend, they are due for renewal,
// or a GPU's memory or its holders changed materially (2% of its memory)
// and the last write is not too recent.
func ReadingDue(stored, fresh []domain.DeviceReading) bool {
	if len(fresh) == 0 {
		return false
	}
	if len(stored) == 0 {
		return true
	}
	age := fresh[0].Time.Sub(stored[0].Time)
	switch {
	case stored[0].Backend != fresh[0].Backend || age >= ReadingHeartbeat || age < 0:
		return true
	case age < ReadingMinGap:
		return false
	case len(stored) != len(fresh):
		return true
	}
	for i, f := range fresh {
		s := stored[i]
		step := max(f.MemoryTotal/50, 1<<20)
		diff := max(s.MemoryUsed, f.MemoryUsed) - min(s.MemoryUsed, f.MemoryUsed)
		if s.Index != f.Index || s.UUID != f.UUID || diff >= step || !sameHolders(s.Holders, f.Holders) {
			return true
		}
	}
	return false
}

func sameHolders(a, b []domain.Holder) bool {
	return slices.EqualFunc(a, b, func(x, y domain.Holder) bool {
		return x.UID == y.UID && x.User == y.User && x.Partition == y.Partition
	})
}

// String says what is physically free, and how old the reading is.
func (m PhysicalMemory) String() string {
	if !m.Known {
		return "physically free memory unknown (no monitor, app or `chronos stats` has read the GPUs in the last " + human.FormatDuration(ReadingFreshFor) + ")"
	}
	return fmt.Sprintf("%s physically free (%s)", human.FormatBytesDown(m.Free), m.readAgo())
}

func (m PhysicalMemory) readAgo() string {
	if m.Age < time.Second {
		return "read just now"
	}
	return "read " + human.FormatDuration(m.Age) + " ago"
}

// Shortfall says, when bytes is more than is physically free, by how much
// and who holds the memory; it is empty when bytes fits or nothing is known.
func (m PhysicalMemory) Shortfall(device int, bytes uint64) string {
	if !m.Known || bytes <= m.Free {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s booked, but only %s of GPU %d is physically free (%s)", human.FormatBytes(bytes), human.FormatBytesDown(m.Free), device, m.readAgo())
	for i, h := range m.Holders {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		under := "with no booking"
		if h.Partition != 0 {
			under = fmt.Sprintf("under booking #%d", h.Partition)
		}
		pids := make([]string, len(h.PIDs))
		for j, pid := range h.PIDs {
			pids[j] = strconv.Itoa(pid)
		}
		fmt.Fprintf(&b, "%s%s uses %s %s (pid %s)", sep, orUnknown(h.User), human.FormatBytes(h.Bytes), under, strings.Join(pids, ", "))
	}
	return b.String()
}

func orUnknown(user string) string {
	if user == "" {
		return "an unknown user"
	}
	return user
}
