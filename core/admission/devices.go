package admission

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

func FindDevice(inv domain.Inventory, index int) (domain.Device, error) {
	for _, d := range inv.Devices {
		if d.Index == index {
			return d, nil
		}
	}
	if len(inv.Devices) == 0 {
		return domain.Device{}, fmt.Errorf("%w: GPU %d (this machine has no GPUs)", domain.ErrNoDevice, index)
	}
	return domain.Device{}, fmt.Errorf("%w: GPU %d (this machine has GPUs 0–%d)", domain.ErrNoDevice, index, len(inv.Devices)-1)
}

// shareOf turns a requested amount into parts per million of the device.
// Sizes round up, so a booking never holds less than was asked.
func shareOf(m human.Memory, dev domain.Device) (int64, error) {
	if m.Bytes > 0 {
		if dev.MemoryTotal == 0 {
			return 0, domain.InputErr("GPU %d's memory size is unknown; book a fraction (0.5) instead", dev.Index)
		}
		if m.Bytes > dev.MemoryTotal {
			return 0, domain.InputErr("%s is more than GPU %d has (%s)", human.FormatBytes(m.Bytes), dev.Index, human.FormatBytes(dev.MemoryTotal))
		}
		return int64(math.Ceil(float64(m.Bytes) * human.Ppm / float64(dev.MemoryTotal))), nil
	}
	return int64(math.Round(m.Fraction * human.Ppm)), nil
}

// overbooked says why GPU g of f's cannot take it from start: what is
// free over the time asked and what was asked (rounded so that the free
// figure never looks enough), who holds the rest and over when, and which
// GPUs have room for the request over that time, its own host's first,
// when it could move there (others: not for a booking of several).
func (b *Books) overbooked(cal Calendar, g GpuID, f Fit, start time.Time, others bool) string {
	dev, share, end := f.Dev(), f.Ask.Share, start.Add(f.Ask.Length)
	for _, d := range f.Devs {
		if d.Index == g.Device {
			dev = d
		}
	}
	others = others && len(f.Devs) < 2
	free := max(0, human.Ppm-cal.Peak(onGPU(g), start, end))
	var sb strings.Builder
	fmt.Fprintf(&sb, "GPU %s has %s (%s) free", b.gpuName(g), human.FormatPercentDown(free), human.FormatBytesDown(BytesOf(free, dev.MemoryTotal)))
	if start.After(b.Now) {
		fmt.Fprintf(&sb, " from %s to %s", human.FormatTime(start, b.Now), human.FormatTime(end, b.Now))
	}
	fmt.Fprintf(&sb, ", %s asked", human.FormatPercentUp(share))
	holders := b.holders(g, start, end)
	const shown = 3
	for i, p := range holders[:min(len(holders), shown)] {
		sep := ", "
		if i == 0 {
			sep = ": held by "
		}
		from := ""
		if p.Upcoming(b.Now) {
			from = "from " + human.FormatTime(p.Start, b.Now) + " "
		}
		fmt.Fprintf(&sb, "%s%s (%s, #%d, %suntil %s)", sep, p.User, human.FormatPercent(p.SharePPM), p.ID, from, human.FormatTime(p.Expires, b.Now))
	}
	if len(holders) > shown {
		fmt.Fprintf(&sb, " and %d more", len(holders)-shown)
	}
	if !others {
		return sb.String()
	}
	var room []string
	// The host's own GPUs, then a few of other hosts'.
	const shownElsewhere = 3
	elsewhere := 0
	hosts := slices.DeleteFunc(slices.Sorted(maps.Keys(b.Invs)), func(h string) bool { return h == g.Host })
	for _, h := range append([]string{g.Host}, hosts...) {
		for _, d := range b.Invs[h].Devices {
			other := GpuID{Host: h, Device: d.Index}
			if f := human.Ppm - cal.Peak(onGPU(other), start, end); other != g && f >= share {
				if h != g.Host {
					if elsewhere++; elsewhere > shownElsewhere {
						continue
					}
				}
				room = append(room, fmt.Sprintf("GPU %s has %s free", b.gpuName(other), human.FormatPercentDown(f)))
			}
		}
	}
	if elsewhere > shownElsewhere {
		room = append(room, fmt.Sprintf("%d more on other hosts", elsewhere-shownElsewhere))
	}
	switch {
	case len(room) > 0:
		sb.WriteString(". " + strings.Join(room, ", "))
	case b.Gpus > 1:
		fmt.Fprintf(&sb, ". No other GPU has %s free", human.FormatPercentUp(share))
	}
	return sb.String()
}

// holders are the live bookings of GPU g over [start, end), the largest
// first, the ones ending soonest among equals.
func (b *Books) holders(g GpuID, start, end time.Time) []domain.Partition {
	var holders []domain.Partition
	for _, p := range b.Parts {
		if p.Host == g.Host && p.Holds(g.Device) && p.State == domain.Live && p.Start.Before(end) && p.Expires.After(start) && p.Expires.After(b.Now) {
			holders = append(holders, p)
		}
	}
	slices.SortFunc(holders, func(a, b domain.Partition) int {
		return cmp.Or(cmp.Compare(b.SharePPM, a.SharePPM), a.Expires.Compare(b.Expires))
	})
	return holders
}

func BytesOf(share int64, total uint64) uint64 {
	return uint64(float64(total) * float64(share) / human.Ppm)
}

// GpusName names GPUs of host as people on host here type them: 0, 0-3,
// gpu3:0,1.
func GpusName(here, host string, devices []int) string {
	if host == here {
		host = ""
	}
	return human.FormatGPUs(host, devices)
}

// GpuName names a GPU of host as people on host here type it.
func GpuName(here, host string, device int) string {
	if host == here {
		host = ""
	}
	return human.FormatGPU(host, device)
}
