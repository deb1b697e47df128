package core

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
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
	readingMinGap    = 5 * time.Second
	readingHeartbeat = time.Minute
	// ReadingFreshFor is how old a stored GPU reading may be and still be
	// shown as what is physically free.
	ReadingFreshFor = 150 * time.Second
	// readingHolders bounds the holders kept per GPU, and readingPIDs the
	// pids kept per holder: a reading stays a few hundred bytes.
	readingHolders = 4
	readingPIDs    = 3
)

// Admission policies: what `policy set admit=…` takes.
const (
	AdmitBooked   = "booked"   // booked shares only: memory in use is a warning
	AdmitPhysical = "physical" // also refuse a booking beyond what is physically free
)

// PhysicalMemory is what one GPU's memory physically held at the last
// fresh reading. Known is false when there is none.
type PhysicalMemory struct {
	Known bool
	// Age is how old the reading was when it was read from the ledger.
	Age               time.Duration
	Total, Used, Free uint64
	Holders           []storage.Holder
}

// readingOf is the compact form of a sample that the ledger keeps: per GPU,
// the memory used and who uses the most of it.
func readingOf(s gpu.Sample, atts []Attribution, now time.Time) []storage.DeviceReading {
	var out []storage.DeviceReading
	for _, d := range s.Devices {
		r := storage.DeviceReading{Time: now, Backend: s.Backend, Index: d.Index, UUID: d.UUID, MemoryTotal: d.MemoryTotal, MemoryUsed: d.MemoryUsed}
		type key struct {
			uid       int
			user      string
			partition uint64
		}
		held := map[key]*storage.Holder{}
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
				h = &storage.Holder{User: a.User, UID: a.UID, Partition: k.partition}
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
		slices.SortFunc(r.Holders, func(a, b storage.Holder) int {
			return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.User, b.User), cmp.Compare(a.Partition, b.Partition))
		})
		r.Holders = r.Holders[:min(len(r.Holders), readingHolders)]
		out = append(out, r)
	}
	return out
}

// readingDue says whether fresh readings should replace the stored ones:
// there are none, they are from another backend, they are due for renewal,
// or a GPU's memory or its holders changed materially (2% of its memory)
// and the last write is not too recent.
func readingDue(stored, fresh []storage.DeviceReading) bool {
	if len(fresh) == 0 {
		return false
	}
	if len(stored) == 0 {
		return true
	}
	age := fresh[0].Time.Sub(stored[0].Time)
	switch {
	case stored[0].Backend != fresh[0].Backend || age >= readingHeartbeat || age < 0:
		return true
	case age < readingMinGap:
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

func sameHolders(a, b []storage.Holder) bool {
	return slices.EqualFunc(a, b, func(x, y storage.Holder) bool {
		return x.UID == y.UID && x.User == y.User && x.Partition == y.Partition
	})
}

// physicalIn reads what dev physically holds from its stored reading, when
// it is fresh and was taken by the backend the inventory came from. A
// missing or damaged reading is only unknown: it is a hint, never a reason
// to refuse.
func physicalIn(tx *storage.Tx, inv storage.Inventory, dev storage.Device, now time.Time) PhysicalMemory {
	r, ok, err := tx.DeviceReading(dev.Index)
	age := now.Sub(r.Time)
	if err != nil || !ok || r.Backend != inv.Backend || r.UUID != dev.UUID || r.MemoryUsed > r.MemoryTotal ||
		age > ReadingFreshFor || age < -ReadingFreshFor {
		return PhysicalMemory{}
	}
	return PhysicalMemory{Known: true, Age: max(age, 0), Total: r.MemoryTotal, Used: r.MemoryUsed,
		Free: r.MemoryTotal - r.MemoryUsed, Holders: r.Holders}
}

// saveReading stores fresh readings of the GPUs the inventory lists when
// readingDue says so; the stored ones are read first, so that an unchanged
// reading costs no write (which would wake every watcher of the ledger).
func (c *Client) saveReading(rs []storage.DeviceReading) error {
	if len(rs) == 0 || c.host != "" {
		return nil // a ledger many hosts share keeps no readings (see Monitor.tick)
	}
	due := false
	err := c.ledger.View(c.ctx, func(tx *storage.Tx) error {
		inv, _, err := tx.Inventory()
		if err != nil || inv.Backend != rs[0].Backend {
			return err
		}
		stored, err := tx.DeviceReadings()
		due = err != nil || readingDue(stored, rs)
		return nil
	})
	if err != nil || !due {
		return err
	}
	return c.ledger.Update(c.ctx, func(tx *storage.Tx) error { return putReadingIfDue(tx, rs) })
}

// putReadingIfDue stores rs inside a write transaction, checking again
// what is stored: another process may have stored readings just now.
func putReadingIfDue(tx *storage.Tx, rs []storage.DeviceReading) error {
	stored, err := tx.DeviceReadings()
	if err == nil && !readingDue(stored, rs) {
		return nil
	}
	return tx.PutDeviceReadings(rs)
}

// String says what is physically free, and how old the reading is.
func (m PhysicalMemory) String() string {
	if !m.Known {
		return "physically free memory unknown (no monitor, app or `chronos stats` has read the GPUs in the last " + FormatDuration(ReadingFreshFor) + ")"
	}
	return fmt.Sprintf("%s physically free (%s)", formatBytesDown(m.Free), m.readAgo())
}

func (m PhysicalMemory) readAgo() string {
	if m.Age < time.Second {
		return "read just now"
	}
	return "read " + FormatDuration(m.Age) + " ago"
}

// Shortfall says, when bytes is more than is physically free, by how much
// and who holds the memory; it is empty when bytes fits or nothing is known.
func (m PhysicalMemory) Shortfall(device int, bytes uint64) string {
	if !m.Known || bytes <= m.Free {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s booked, but only %s of GPU %d is physically free (%s)", FormatBytes(bytes), formatBytesDown(m.Free), device, m.readAgo())
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
		fmt.Fprintf(&b, "%s%s uses %s %s (pid %s)", sep, orUnknown(h.User), FormatBytes(h.Bytes), under, strings.Join(pids, ", "))
	}
	return b.String()
}

func orUnknown(user string) string {
	if user == "" {
		return "an unknown user"
	}
	return user
}

// Room is what the GPU has room for: the share still bookable, and next to
// it the memory physically free. Create fills it in as it was before the
// booking; the app's form shows it for each GPU.
func (a Availability) Room() string {
	return fmt.Sprintf("%s (%s) bookable, %s", FormatPercentDown(a.FreePPM), formatBytesDown(a.FreeBytes), a.Physical)
}

// Warning says when a booking of bytes is more than the GPU physically
// has free, and who holds the rest; empty when it fits or nothing is known.
func (a Availability) Warning(bytes uint64) string {
	return a.Physical.Shortfall(a.Device.Index, bytes)
}
