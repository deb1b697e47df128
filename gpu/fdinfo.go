package gpu

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// drmClient is one open DRM file as /proc/PID/fdinfo/FD describes it, in
// the kernel's format (Documentation/gpu/drm-usage-stats.rst), which
// amdgpu, i915 and xe all print.
type drmClient struct {
	driver string // drm-driver
	pdev   string // drm-pdev: the device's PCI slot
	id     string // drm-client-id; "" when the driver gives none
	// memory is what the client holds resident in the device's own memory
	// (vram*, local*), or in any region on a GPU without its own (an
	// integrated one).
	memory  uint64
	engines []engineUse
}

// engineUse is one engine's busy counter: nanoseconds busy (drm-engine-*),
// or busy and total GPU cycles (drm-cycles-*, drm-total-cycles-*, xe).
type engineUse struct {
	name            string
	busyNS          uint64
	cycles, total   uint64
	capacity        uint64 // identical engines behind the name; 0 means 1
	hasNS, hasCycle bool
}

// region accumulates one memory region's figures while parsing.
type region struct {
	name               string
	resident, memory   uint64
	hasResident, hasMe bool
}

// parseFDInfo reads an fdinfo file; ok is false when it is not a DRM
// client's (no drm-driver line) or names no PCI device. Lines it does not
// understand are skipped, as the format allows drivers their own keys.
//
//nolint:funlen,gocyclo // one case per fdinfo key that amdgpu, i915 and xe write
func parseFDInfo(b []byte) (c drmClient, ok bool) {
	var regions []region
	regionAt := func(name string) *region {
		for i := range regions {
			if regions[i].name == name {
				return &regions[i]
			}
		}
		regions = append(regions, region{name: name})
		return &regions[len(regions)-1]
	}
	engineAt := func(name string) *engineUse {
		for i := range c.engines {
			if c.engines[i].name == name {
				return &c.engines[i]
			}
		}
		c.engines = append(c.engines, engineUse{name: name})
		return &c.engines[len(c.engines)-1]
	}
	for line := range bytes.Lines(b) {
		key, value, found := bytes.Cut(line, []byte(":"))
		if !found || !bytes.HasPrefix(key, []byte("drm-")) {
			continue
		}
		k := string(bytes.TrimSpace(key))
		v := string(bytes.TrimSpace(value))
		switch {
		case k == "drm-driver":
			c.driver = v
		case k == "drm-pdev":
			c.pdev = v
		case k == "drm-client-id":
			c.id = v
		case strings.HasPrefix(k, "drm-engine-capacity-"):
			if n, err := strconv.ParseUint(v, 10, 64); err == nil && n > 0 {
				engineAt(strings.TrimPrefix(k, "drm-engine-capacity-")).capacity = n
			}
		case strings.HasPrefix(k, "drm-engine-"):
			if ns, ok := parseUnit(v, timeUnits); ok {
				e := engineAt(strings.TrimPrefix(k, "drm-engine-"))
				e.busyNS, e.hasNS = ns, true
			}
		case strings.HasPrefix(k, "drm-total-cycles-"):
			if n, err := strconv.ParseUint(v, 10, 64); err == nil {
				engineAt(strings.TrimPrefix(k, "drm-total-cycles-")).total = n
			}
		case strings.HasPrefix(k, "drm-cycles-"):
			if n, err := strconv.ParseUint(v, 10, 64); err == nil {
				e := engineAt(strings.TrimPrefix(k, "drm-cycles-"))
				e.cycles, e.hasCycle = n, true
			}
		case strings.HasPrefix(k, "drm-resident-"):
			if n, ok := parseUnit(v, memoryUnits); ok {
				r := regionAt(strings.TrimPrefix(k, "drm-resident-"))
				r.resident, r.hasResident = n, true
			}
		case strings.HasPrefix(k, "drm-memory-"):
			// The old name for drm-resident-; amdgpu prints both.
			if n, ok := parseUnit(v, memoryUnits); ok {
				r := regionAt(strings.TrimPrefix(k, "drm-memory-"))
				r.memory, r.hasMe = n, true
			}
		}
	}
	if c.driver == "" || c.pdev == "" {
		return drmClient{}, false
	}
	// A capacity or a total with no busy counter tells nothing.
	c.engines = slices.DeleteFunc(c.engines, func(e engineUse) bool { return !e.hasNS && !e.hasCycle })
	var local, all uint64
	hasLocal := false
	for _, r := range regions {
		n := r.memory
		if r.hasResident {
			n = r.resident
		}
		all += n
		if strings.HasPrefix(r.name, "vram") || strings.HasPrefix(r.name, "local") {
			local += n
			hasLocal = true
		}
	}
	c.memory = all
	if hasLocal {
		c.memory = local
	}
	return c, true
}

var (
	memoryUnits = map[string]uint64{"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
	timeUnits   = map[string]uint64{"": 1, "ns": 1}
)

// parseUnit reads "<uint> [unit]" with one of the units given; a value that
// would overflow is refused.
func parseUnit(v string, units map[string]uint64) (uint64, bool) {
	f := strings.Fields(v)
	if len(f) == 0 || len(f) > 2 {
		return 0, false
	}
	unit := ""
	if len(f) == 2 {
		unit = f[1]
	}
	mult, ok := units[unit]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil || n > math.MaxUint64/mult {
		return 0, false
	}
	return n * mult, true
}

// busyPercent is the share of time the client kept its busiest engine
// (group) busy between two readings, 0–100; ok is false when there is no
// earlier reading to compare with. Counters that went backwards count as
// unchanged, as the format asks.
func busyPercent(prev, cur []engineUse, elapsed time.Duration) (pct float64, ok bool) {
	for _, e := range cur {
		var p *engineUse
		for i := range prev {
			if prev[i].name == e.name {
				p = &prev[i]
				break
			}
		}
		if p == nil {
			continue
		}
		capacity := float64(max(e.capacity, 1))
		var share float64
		switch {
		case e.hasCycle && p.hasCycle && e.total > p.total:
			if e.cycles <= p.cycles {
				ok = true
				continue
			}
			share = float64(e.cycles-p.cycles) / float64(e.total-p.total) / capacity
		case e.hasNS && p.hasNS && elapsed > 0:
			if e.busyNS <= p.busyNS {
				ok = true
				continue
			}
			share = float64(e.busyNS-p.busyNS) / float64(elapsed.Nanoseconds()) / capacity
		default:
			continue
		}
		ok = true
		pct = max(pct, min(share*100, 100))
	}
	return pct, ok
}

// keepLarger carries forward the larger of each counter, so that a counter
// that went backwards is held until it catches up.
func keepLarger(prev, cur []engineUse) []engineUse {
	out := make([]engineUse, len(cur))
	copy(out, cur)
	for i := range out {
		for _, p := range prev {
			if p.name != out[i].name {
				continue
			}
			out[i].busyNS = max(out[i].busyNS, p.busyNS)
			if out[i].cycles < p.cycles {
				out[i].cycles = p.cycles
			}
		}
	}
	return out
}
