package view

import (
	"fmt"
	"io"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// WriteBackends prints what `chronos backends` found: the backends, MPS,
// the mode and the hosts of a shared ledger with their clocks.
func WriteBackends(out io.Writer, r BackendsJSON, mps procfs.MPS) error {
	fmt.Fprintf(out, "NVML:                %s\n", availability(r.NVMLAvailable, r.NVMLDetail))
	fmt.Fprintf(out, "DRM:                 %s\n", availability(r.DRMAvailable, r.DRMDetail))
	fmt.Fprintf(out, "MPS daemon:          %s\n", mpsLine(mps))
	fmt.Fprintf(out, "concurrent possible: %s\n", yesNo(r.ConcurrentPossible))
	fmt.Fprintf(out, "recommended:         %s\n", r.Recommended)
	fmt.Fprintf(out, "active backend:      %s\n", r.ActiveBackend)
	fmt.Fprintf(out, "mode:                %s\n", mps.Label())
	for _, h := range r.Hosts {
		state := "live"
		if !h.Live {
			state = "not seen (no monitor publishing)"
		}
		skew := "clock not measured yet"
		if h.SkewSeconds != nil {
			skew = fmt.Sprintf("clock %+.2f s", *h.SkewSeconds)
		}
		fmt.Fprintf(out, "host %-15s %s, %d GPUs, %s\n", human.Printable(h.Host)+":", state, h.GPUs, skew)
	}
	for _, w := range r.ClockWarnings {
		fmt.Fprintf(out, "warning:             %s\n", human.Printable(w))
	}
	return nil
}

// ActiveBackend says which backend gpu.Open would pick for kind, from what
// the probes above found (a nil error: it has GPUs), without starting NVML
// a second time.
func ActiveBackend(kind string, nvmlErr, drmErr error) string {
	k, err := gpu.ParseKind(kind)
	if err == nil {
		k, err = gpu.Pick(k, nvmlErr, drmErr)
	}
	switch {
	case err != nil:
		return "none: " + err.Error()
	case k == gpu.KindSim:
		return "simulated"
	}
	return string(k)
}

func availability(ok bool, detail string) string {
	if ok {
		return "available (" + detail + ")"
	}
	return "not available: " + detail
}

func mpsLine(m procfs.MPS) string {
	if !m.Running {
		return "not running (pipe directory " + m.PipeDir + ")"
	}
	s := "running"
	if m.MultiUser {
		s += ", multi-user (-M)"
	} else {
		s += ", single-user: other users' clients queue"
	}
	if m.DefaultActiveThreadPercentage != "" {
		s += ", default active threads " + m.DefaultActiveThreadPercentage + "%"
	}
	if m.Detail != "" {
		s += " (" + m.Detail + ")"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
