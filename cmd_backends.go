package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
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
			r.ActiveBackend = view.ActiveBackend(g.backendKind(), nvmlErr, drmErr)
			if err := reportHosts(g, &r); err != nil {
				return err
			}
			if asJSON {
				return view.PrintJSON(cmd.OutOrStdout(), r)
			}
			return view.WriteBackends(cmd.OutOrStdout(), r, mps)
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
