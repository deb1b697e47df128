package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

func backendsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "backends",
		Short: "What this machine supports: NVML, MPS, concurrent or time-sliced sharing",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var r view.BackendsJSON
			n, nvmlErr := gpu.OpenNVML()
			if nvmlErr != nil {
				r.NVMLDetail = nvmlErr.Error()
			} else {
				devs, _ := n.Devices()
				r.NVMLAvailable, r.Driver, r.GPUs = true, n.DriverVersion(), len(devs)
				r.NVMLDetail = fmt.Sprintf("driver %s, %d GPU(s)", r.Driver, r.GPUs)
				if r.GPUs == 0 {
					nvmlErr = gpu.ErrNoGPUs
				}
				_ = n.Close()
			}
			d, drmErr := gpu.OpenDRM(gpu.DRMOptions{})
			if drmErr != nil {
				r.DRMDetail = drmErr.Error()
			} else {
				devs, _ := d.Devices()
				r.DRMAvailable, r.DRMDetail = true, fmt.Sprintf("%d AMD or Intel GPU(s), read through the kernel", len(devs))
				_ = d.Close()
			}
			mps := procfs.DetectMPS("")
			r.MPSRunning, r.MPSMultiUser, r.MPSPipeDir, r.MPSDetail = mps.Running, mps.MultiUser, mps.PipeDir, mps.Detail
			r.ConcurrentPossible = r.NVMLAvailable && mps.Running
			r.Mode = mps.Mode()
			switch {
			case !r.NVMLAvailable && r.DRMAvailable:
				r.Recommended = "time-sliced: AMD and Intel GPUs have no MPS; the monitor watches each booking's memory, nothing caps it, and --compute is only recorded"
			case !r.NVMLAvailable:
				r.Recommended = "simulated: no NVIDIA driver is usable here"
			case mps.Running && !mps.MultiUser:
				r.Recommended = "concurrent, but restart MPS with -M so users run side by side instead of queueing"
			case mps.Running:
				r.Recommended = "concurrent: bookings' memory and compute limits are applied through MPS"
			default:
				r.Recommended = "time-sliced works now; for concurrency with memory limits, as root: nvidia-cuda-mps-control -d -M"
			}
			r.ActiveBackend = activeBackend(g.backendKind(), nvmlErr, drmErr)
			if err := reportHosts(g, &r); err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), r)
			}
			out := cmd.OutOrStdout()
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
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// reportHosts adds the other hosts of a shared ledger, with their clocks'
// skew as the monitors measure it, to the report.
func reportHosts(g *globals, r *view.BackendsJSON) error {
	cfg, err := g.storeConfig()
	if err != nil || !onEtcd(cfg) {
		return err
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	hosts, err := c.Hosts()
	if err != nil {
		return err
	}
	for _, h := range hosts {
		r.Hosts = append(r.Hosts, view.Host(h))
	}
	r.ClockWarnings = core.SkewWarnings(c.Host(), hosts)
	return nil
}

// activeBackend says which backend gpu.Open would pick for kind, from what
// the probes above found (a nil error: it has GPUs), without starting NVML
// a second time.
func activeBackend(kind string, nvmlErr, drmErr error) string {
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
