package tui

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/chronos-gpu/chronos/core"
)

// WriteBookings prints bookings as a plain table for `chronos list`: no
// colour, one line each, columns aligned, so it reads well and greps well.
func WriteBookings(w io.Writer, parts []core.Partition, now time.Time, warnLead time.Duration) error {
	if len(parts) == 0 {
		_, err := fmt.Fprintln(w, "No bookings.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// A ledger many hosts share says whose GPU each booking holds.
	hosts := slices.ContainsFunc(parts, func(p core.Partition) bool { return p.Host != "" })
	fmt.Fprint(tw, "ID\t")
	if hosts {
		fmt.Fprint(tw, "HOST\t")
	}
	fmt.Fprintln(tw, "OWNER\tGPU\tSHARE\tMEMORY\tLEFT\tEXPIRES\tSTATE")
	for _, p := range parts {
		left := "-"
		if p.LiveAt(now) {
			left = Countdown(p.Expires.Sub(now))
		}
		fmt.Fprintf(tw, "%d\t", p.ID)
		if hosts {
			fmt.Fprintf(tw, "%s\t", p.Host)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", p.User, p.Device,
			core.FormatPercent(p.SharePPM), core.FormatBytes(p.Bytes), left,
			p.Expires.Local().Format("Jan 2 15:04:05"), core.Status(p.Partition, now, warnLead))
	}
	return tw.Flush()
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

// WriteStats prints one reading of every GPU and the processes on it, each
// with the booking it counts against, for `chronos stats`.
func WriteStats(w io.Writer, st core.Stats) error {
	label := st.Sample.Backend
	if st.Sample.Simulated {
		label = "SIMULATED GPUs (no NVIDIA driver in use)"
	}
	fmt.Fprintf(w, "Backend: %s   Mode: %s   %s\n", label, st.Mode, st.Sample.Time.Local().Format("15:04:05"))
	for _, d := range st.Sample.Devices {
		booked := st.Booked[d.Index]
		fmt.Fprintf(w, "\nGPU %d  %s%s\n", d.Index, d.Name, migLabel(d.MIG))
		fmt.Fprintf(w, "  memory  %s used, %s booked (%s), %s free of %s\n", core.FormatBytes(d.MemoryUsed),
			core.FormatBytes(booked.Bytes), core.FormatPercent(booked.PPM), core.FormatBytes(d.MemoryFree), core.FormatBytes(d.MemoryTotal))
		fmt.Fprintf(w, "  load    util %s  mem-bw %s  temp %s  power %s\n", percentOrNA(d.Util), percentOrNA(d.MemUtil), tempOrNA(d.TempC), powerOrNA(d.PowerW))
		for _, n := range d.Notes {
			fmt.Fprintf(w, "  note    %s\n", n)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		n := 0
		for _, a := range st.Processes {
			if a.Device != d.Index {
				continue
			}
			if n == 0 {
				fmt.Fprintln(tw, "  PID\tUSER\tMEMORY\tSM\tBOOKING\tCOMMAND")
			}
			n++
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\n", a.PID, orDash(a.User), core.FormatBytes(a.MemoryUsed), percentOrNA(a.SM), verdictText(a), a.Command)
		}
		if n == 0 {
			fmt.Fprintln(tw, "  no compute processes")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func migLabel(mig bool) string {
	if mig {
		return "  (MIG enabled)"
	}
	return ""
}

func percentOrNA(v int) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%d%%", v)
}

func tempOrNA(v int) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%d°C", v)
}

func powerOrNA(w float64) string {
	if w < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f W", w)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
