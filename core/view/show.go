package view

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// WriteBooking prints everything known of one booking for `chronos show`:
// its record and state, what monitors measured, its holds, the GPU
// processes that count against it now (or why they could not be read: a
// non-empty procsNote), and its audit trail.
func WriteBooking(w io.Writer, p core.Partition, procs []admission.Attribution, procsNote string, evs []domain.Event, now time.Time, warnLead time.Duration) error {
	status := p.Status(now, warnLead)
	fmt.Fprintf(w, "Booking %d: %s (%s) of GPU %s for %s\n", p.ID, human.FormatPercent(p.SharePPM), human.FormatBytes(p.Bytes), human.Printable(p.GPUName()), human.Printable(p.User))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	field := func(name, format string, a ...any) { fmt.Fprintf(tw, "  %s\t%s\n", name, fmt.Sprintf(format, a...)) }
	switch {
	case status.Ended():
		field("state", "%s at %s", status, human.FormatTime(p.End(), now))
	case p.Upcoming(now):
		field("state", "%s, starts in %s, at %s, until %s", status, Countdown(p.Start.Sub(now)), human.FormatTime(p.Start, now), human.FormatTime(p.Expires, now))
	default:
		field("state", "%s, %s left, until %s", status, Countdown(p.Expires.Sub(now)), human.FormatTime(p.Expires, now))
	}
	field("created", "%s", human.FormatTime(p.Created, now))
	if len(p.Devices) > 1 {
		field("GPUs", "%s %s", human.FormatGPUs("", p.Devices), strings.Join(p.DeviceUUIDs, " "))
		if p.Placement != "" {
			field("placed", "%s", human.Printable(p.Placement))
		}
	} else {
		field("GPU", "%d %s", p.Device, cmp.Or(p.DeviceUUID, "-"))
	}
	if p.ComputePct > 0 {
		field("compute", "%s", computeCap(p))
	}
	if r := p.Wrapper; r != nil {
		field("run by", "chronos run, pid %d on %s", r.PID, human.Printable(r.Host))
	}
	u := p.Usage
	if u.Through.IsZero() {
		field("usage", "not measured (no monitor has watched it)")
	} else {
		parts := []string{"GPU time " + human.FormatDuration(u.GPUTime), "idle " + human.FormatDuration(u.Idle) + " in all"}
		if idle := human.FormatIdleFor(p.Partition, u, now); idle != "" {
			parts = append(parts, "idle now for "+idle)
		}
		parts = append(parts, "memory peak "+human.FormatBytes(u.MemoryPeak))
		if !u.LastActive.IsZero() {
			parts = append(parts, "last active "+human.FormatTime(u.LastActive, now))
		}
		field("usage", "%s (measured until %s)", strings.Join(parts, ", "), human.FormatTime(u.Through, now))
	}
	if u.Holds > 0 {
		field("holds", "%d, the last until %s: %s", u.Holds, human.FormatTime(u.HeldUntil, now), human.Printable(u.HoldReason))
	}
	if !u.Reclaimed.IsZero() {
		field("reclaimed", "%s, for sitting idle", human.FormatTime(u.Reclaimed, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nProcesses now:\n")
	if procsNote != "" {
		fmt.Fprintf(w, "  %s\n", human.Printable(procsNote))
	} else if err := writeProcesses(w, procs, anyInContainer(procs)); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nEvents:\n")
	WriteEvents(w, evs, "  ")
	return nil
}

// WriteEvents prints audit events one a line, each after indent.
func WriteEvents(w io.Writer, evs []domain.Event, indent string) {
	for _, e := range evs {
		fmt.Fprintf(w, "%s%s  %s\n", indent, e.Time.Local().Format("2006-01-02 15:04:05.000"), human.Printable(human.FormatEvent(e)))
	}
}

// BookingProcesses reads the GPUs now and returns the processes that count
// against booking id or claim it; when the GPUs cannot be read, why.
func BookingProcesses(c *core.Client, backend string, id uint64) ([]admission.Attribution, string) {
	b, _, err := c.OpenGPUs(backend)
	if err != nil {
		return nil, fmt.Sprintf("cannot read the GPUs: %v", err)
	}
	defer b.Close()
	st, err := c.Stats(b, procfs.DetectMPS(""))
	if err != nil {
		return nil, fmt.Sprintf("cannot read the GPUs: %v", err)
	}
	procs := []admission.Attribution{}
	for _, a := range st.Processes {
		if a.Partition == id || a.Claimed == id {
			procs = append(procs, a)
		}
	}
	return procs, ""
}
