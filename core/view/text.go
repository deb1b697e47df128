package view

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
)

// TableOptions shape a plain table: Wide adds columns, NoHeaders leaves
// out the header line (and the "No bookings." of an empty table) for
// scripts.
type TableOptions struct {
	Wide, NoHeaders bool
}

// WriteBookings prints bookings as a plain table for `chronos list`: no
// colour, one line each, columns aligned, so it reads well and greps well.
// COMPUTE comes last, then ENDED, which appears only with history, then
// the wide columns.
func WriteBookings(w io.Writer, parts []core.Partition, now time.Time, warnLead time.Duration, o TableOptions) error {
	if len(parts) == 0 {
		if o.NoHeaders {
			return nil
		}
		_, err := fmt.Fprintln(w, "No bookings.")
		return err
	}
	history := false
	for _, p := range parts {
		history = history || p.Status(now, warnLead).Ended()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// A ledger many hosts share says whose GPU each booking holds.
	hosts := slices.ContainsFunc(parts, func(p core.Partition) bool { return p.Host != "" })
	header := "ID\tOWNER\tGPU\tSHARE\tMEMORY\tLEFT\tSTARTS\tEXPIRES\tIDLE\tSTATE\tCOMPUTE"
	if hosts {
		header = "ID\tHOST\t" + strings.TrimPrefix(header, "ID\t")
	}
	if history {
		header += "\tENDED"
	}
	if o.Wide {
		header += "\tCREATED\tGPU TIME\tPEAK\tUUID"
	}
	if !o.NoHeaders {
		fmt.Fprintln(tw, header)
	}
	for _, p := range parts {
		compute, ended := "-", "-"
		status := p.Status(now, warnLead)
		if p.ComputePct > 0 {
			compute = computeCap(p)
		}
		if status.Ended() {
			ended = p.End().Local().Format("Jan 2 15:04:05")
		}
		fmt.Fprintf(tw, "%d\t", p.ID)
		if hosts {
			fmt.Fprintf(tw, "%s\t", human.Printable(p.Host))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", human.Printable(p.User), human.FormatGPUs("", p.GPUs()),
			human.FormatPercent(p.SharePPM), human.FormatBytes(p.Bytes), BookingLeft(p.Partition, now, Countdown),
			p.Start.Local().Format("Jan 2 15:04:05"), p.Expires.Local().Format("Jan 2 15:04:05"),
			human.FormatIdle(p.Partition, p.Usage, now), status, compute)
		if history {
			fmt.Fprintf(tw, "\t%s", ended)
		}
		if o.Wide {
			gpuTime, peak := "-", "-"
			if !p.Usage.Through.IsZero() {
				gpuTime, peak = human.FormatDuration(p.Usage.GPUTime), human.FormatBytes(p.Usage.MemoryPeak)
			}
			fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s", p.Created.Local().Format("Jan 2 15:04:05"), gpuTime, peak, cmp.Or(p.DeviceUUID, "-"))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// BookingLeft is a booking's countdown in the given form: the time it has
// left, its whole length while it has not started, "-" once it has ended.
func BookingLeft(p domain.Partition, now time.Time, form func(time.Duration) string) string {
	switch {
	case p.Upcoming(now):
		return form(p.Expires.Sub(p.Start))
	case p.LiveAt(now):
		return form(p.Expires.Sub(now))
	}
	return "-"
}

// Countdown prints time left as h:mm:ss (d+h:mm:ss past a day).
func Countdown(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64((d + time.Second - 1) / time.Second) // a booking with 0.4 s left still shows 0:00:01
	days, h, m, sec := s/86400, (s%86400)/3600, (s%3600)/60, s%60
	if days > 0 {
		return fmt.Sprintf("%dd+%d:%02d:%02d", days, h, m, sec)
	}
	return fmt.Sprintf("%d:%02d:%02d", h, m, sec)
}

// secondsWithin is how near its end a booking's countdown in the app shows
// seconds. Further out it shows minutes: a row then changes once a minute,
// not every second, and the terminal is sent that much less.
const secondsWithin = 10 * time.Minute

// TimeLeft is the app's countdown: "2h05m" or "3d04h10m" to the minute
// (rounded up), and "9m59s" or "42s" in a booking's last secondsWithin.
func TimeLeft(d time.Duration) string {
	s := int64((max(d, 0) + time.Second - 1) / time.Second)
	if s <= int64(secondsWithin/time.Second) {
		if s < 60 {
			return fmt.Sprintf("%ds", s)
		}
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	m := (s + 59) / 60
	days, h, m := m/(24*60), m/60%24, m%60
	switch {
	case days > 0:
		return fmt.Sprintf("%dd%02dh%02dm", days, h, m)
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	}
	return fmt.Sprintf("%dm", m)
}

// WriteStats prints one reading of every GPU and the processes on it, each
// with the booking it counts against, for `chronos stats`.
func WriteStats(w io.Writer, st core.Stats) error {
	label := st.Sample.Backend
	if st.Sample.Simulated {
		label = "SIMULATED GPUs (no NVIDIA driver in use)"
	}
	fmt.Fprintf(w, "Backend: %s   Mode: %s   %s\n", label, st.Mode, st.Sample.Time.Local().Format("15:04:05"))
	containers := anyInContainer(st.Processes)
	for _, d := range st.Sample.Devices {
		booked := st.Booked[d.Index]
		fmt.Fprintf(w, "\nGPU %d  %s%s\n", d.Index, human.Printable(d.Name), migLabel(d.MIG))
		free := human.FormatBytes(d.MemoryFree) + " free of " + human.FormatBytes(d.MemoryTotal)
		if d.MemoryTotal == 0 {
			free = "size not reported"
		}
		fmt.Fprintf(w, "  memory  %s used, %s booked (%s), %s\n", human.FormatBytes(d.MemoryUsed),
			human.FormatBytes(booked.Bytes), human.FormatPercent(booked.PPM), free)
		fmt.Fprintf(w, "  load    util %s  mem-bw %s  temp %s  power %s\n", reading(d.Util, "%d%%"), reading(d.MemUtil, "%d%%"), reading(d.TempC, "%d°C"), reading(d.PowerW, "%.0f W"))
		for _, n := range d.Notes {
			fmt.Fprintf(w, "  note    %s\n", human.Printable(n))
		}
		var procs []admission.Attribution
		for _, a := range st.Processes {
			if a.Device == d.Index {
				procs = append(procs, a)
			}
		}
		if err := writeProcesses(w, procs, containers); err != nil {
			return err
		}
	}
	// Bookings on a GPU the backend no longer shows stand: say so.
	booked := slices.Sorted(maps.Keys(st.Booked))
	for _, dev := range booked {
		if slices.ContainsFunc(st.Sample.Devices, func(d gpu.DeviceSample) bool { return d.Index == dev }) {
			continue
		}
		b := st.Booked[dev]
		if _, err := fmt.Fprintf(w, "\nGPU %d  gone: not on this machine now, yet %d live booking(s) hold %s (%s) of it\n",
			dev, b.Count, human.FormatPercent(b.PPM), human.FormatBytes(b.Bytes)); err != nil {
			return err
		}
	}
	return nil
}

// writeProcesses prints GPU processes as an indented table, with the
// booking each counts against; CONTAINER when containers is set.
func writeProcesses(w io.Writer, procs []admission.Attribution, containers bool) error {
	if len(procs) == 0 {
		_, err := fmt.Fprintln(w, "  no compute processes")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PID\tUSER\tMEMORY\tSM\tBOOKING\t"+containerCell(containers, "CONTAINER")+"COMMAND")
	for _, a := range procs {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s%s\n", a.PID, cmp.Or(human.Printable(a.User), "-"), human.FormatBytes(a.MemoryUsed), reading(a.SM, "%d%%"), Verdict(a),
			containerCell(containers, cmp.Or(human.Printable(a.Container.Label()), "-")), human.Printable(a.Command))
	}
	return tw.Flush()
}

// anyInContainer reports whether a process runs in a container: only then
// do tables spend a column on containers.
func anyInContainer(procs []admission.Attribution) bool {
	for _, a := range procs {
		if a.Container.InContainer() {
			return true
		}
	}
	return false
}

// containerCell is a tab-ended CONTAINER cell when the column is shown.
func containerCell(shown bool, s string) string {
	if !shown {
		return ""
	}
	return s + "\t"
}

// reading is a figure in format, or "n/a" where the hardware or the
// driver gives none (a negative figure).
func reading[N int | float64](v N, format string) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf(format, v)
}

// Verdict says what a process counts against, in the words both the
// app and `chronos stats` show: "#7", "OVER BUDGET #7", "ENDED #7",
// "UNBOOKED", "FALSE CLAIM #7" for an unbooked process whose environment
// names someone else's booking, or "MPS SERVER".
func Verdict(a admission.Attribution) string {
	switch a.Verdict {
	case admission.Unbooked:
		if a.Claimed != 0 {
			return fmt.Sprintf("FALSE CLAIM #%d", a.Claimed)
		}
		return "UNBOOKED"
	case admission.OverBudget:
		return fmt.Sprintf("OVER BUDGET #%d", a.Partition)
	case admission.Ended:
		return fmt.Sprintf("ENDED #%d", a.Partition)
	case admission.MPSServer:
		return "MPS SERVER"
	}
	return fmt.Sprintf("#%d", a.Partition)
}

func migLabel(mig bool) string {
	if mig {
		return "  (MIG enabled)"
	}
	return ""
}

// computeCap is a booking's cap on the share of SMs, and whether it is
// only recorded (AMD and Intel GPUs have no MPS to apply it).
func computeCap(p core.Partition) string {
	s := fmt.Sprintf("%d%% of SMs", p.ComputePct)
	if p.CapNotApplied {
		s += " (not applied)"
	}
	return s
}
