package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Fuzz targets for what the kernel and container runtimes hand chronos:
// DRM fdinfo, cgroup paths, uid maps and stat lines. Each holds: no panic,
// and what is accepted keeps its invariants. `make fuzz` runs each.

// formatFDInfo writes a client back in the kernel's format.
func formatFDInfo(c drmClient) string {
	var b strings.Builder
	fmt.Fprintf(&b, "drm-driver:\t%s\ndrm-pdev:\t%s\n", c.driver, c.pdev)
	if c.id != "" {
		fmt.Fprintf(&b, "drm-client-id:\t%s\n", c.id)
	}
	fmt.Fprintf(&b, "drm-resident-vram0:\t%d\n", c.memory)
	for _, e := range c.engines {
		if e.hasNS {
			fmt.Fprintf(&b, "drm-engine-%s:\t%d ns\n", e.name, e.busyNS)
		}
		if e.hasCycle {
			fmt.Fprintf(&b, "drm-cycles-%s:\t%d\n", e.name, e.cycles)
		}
		if e.total > 0 {
			fmt.Fprintf(&b, "drm-total-cycles-%s:\t%d\n", e.name, e.total)
		}
		if e.capacity > 0 {
			fmt.Fprintf(&b, "drm-engine-capacity-%s:\t%d\n", e.name, e.capacity)
		}
	}
	return b.String()
}

func FuzzParseFDInfo(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "drm", "*", "proc", "*", "fdinfo", "*"))
	for _, path := range seeds {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("drm-driver: amdgpu\ndrm-pdev: 0000:03:00.0\ndrm-engine-gfx: 18446744073709551615 ns\ndrm-memory-vram: 18446744073709551615 KiB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok := parseFDInfo(b)
		if !ok {
			return
		}
		if c.driver == "" || c.pdev == "" {
			t.Fatalf("accepted a client without driver or device: %+v", c)
		}
		// Whatever was read reads back the same once written out.
		clean := c.driver == strings.TrimSpace(c.driver) && c.pdev == strings.TrimSpace(c.pdev) && c.id == strings.TrimSpace(c.id)
		for _, s := range []string{c.driver, c.pdev, c.id} {
			clean = clean && !strings.ContainsAny(s, "\n\r")
		}
		for _, e := range c.engines {
			clean = clean && e.name != "" && !strings.ContainsAny(e.name, ":\n\r \t") && !strings.HasPrefix(e.name, "capacity-")
		}
		if clean {
			again, ok := parseFDInfo([]byte(formatFDInfo(c)))
			if !ok || fmt.Sprint(again) != fmt.Sprint(c) {
				t.Fatalf("%+v writes as %q, which reads back as %+v (%v)", c, formatFDInfo(c), again, ok)
			}
		}
		// A busy share is a share: never below 0 or above 100.
		if pct, ok := busyPercent(c.engines, c.engines, time.Second); ok && pct != 0 {
			t.Fatalf("unchanged counters gave %v%%", pct)
		}
		grown := keepLarger(nil, c.engines)
		for i := range grown {
			grown[i].busyNS /= 2
			grown[i].cycles /= 2
			grown[i].total /= 2
		}
		if pct, ok := busyPercent(grown, c.engines, time.Nanosecond); ok && (pct < 0 || pct > 100) {
			t.Fatalf("busy share %v%% from %+v", pct, c.engines)
		}
	})
}
