package tui

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
)

// Printable returns s with every character that could act on a terminal
// shown escaped instead, as ps and less do: C0 controls (ESC among them),
// DEL, C1 controls (U+0080–U+009F, which some terminals obey as ESC
// sequences), bytes that are not UTF-8 (a lone 0x9b is CSI to others), and
// the marks that reorder or break lines (bidi overrides, line separators).
// Every string another user controls — command lines, user names, event
// details, the names in the ledger — passes through it before it reaches a
// terminal, so it cannot retitle the window, clear the screen or move the
// cursor. JSON output stays exact.
func Printable(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s // plain ASCII: the common case costs no copy
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f, reorders(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// reorders says whether r changes the order or the lines of the text
// around it.
func reorders(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

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
			fmt.Fprintf(tw, "%s\t", Printable(p.Host))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", Printable(p.User), p.Device,
			core.FormatPercent(p.SharePPM), core.FormatBytes(p.Bytes), left,
			p.Expires.Local().Format("Jan 2 15:04:05"), p.Status(now, warnLead))
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
	containers := anyInContainer(st.Processes)
	for _, d := range st.Sample.Devices {
		booked := st.Booked[d.Index]
		fmt.Fprintf(w, "\nGPU %d  %s%s\n", d.Index, Printable(d.Name), migLabel(d.MIG))
		free := core.FormatBytes(d.MemoryFree) + " free of " + core.FormatBytes(d.MemoryTotal)
		if d.MemoryTotal == 0 {
			free = "size not reported"
		}
		fmt.Fprintf(w, "  memory  %s used, %s booked (%s), %s\n", core.FormatBytes(d.MemoryUsed),
			core.FormatBytes(booked.Bytes), core.FormatPercent(booked.PPM), free)
		fmt.Fprintf(w, "  load    util %s  mem-bw %s  temp %s  power %s\n", percentOrNA(d.Util), percentOrNA(d.MemUtil), tempOrNA(d.TempC), powerOrNA(d.PowerW))
		for _, n := range d.Notes {
			fmt.Fprintf(w, "  note    %s\n", Printable(n))
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		n := 0
		for _, a := range st.Processes {
			if a.Device != d.Index {
				continue
			}
			if n == 0 {
				fmt.Fprintln(tw, "  PID\tUSER\tMEMORY\tSM\tBOOKING\t"+containerCell(containers, "CONTAINER")+"COMMAND")
			}
			n++
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s%s\n", a.PID, orDash(Printable(a.User)), core.FormatBytes(a.MemoryUsed), percentOrNA(a.SM), verdictText(a),
				containerCell(containers, orDash(Printable(a.Container.Label()))), Printable(a.Command))
		}
		if n == 0 {
			fmt.Fprintln(tw, "  no compute processes")
		}
		if err := tw.Flush(); err != nil {
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
			dev, b.Count, core.FormatPercent(b.PPM), core.FormatBytes(b.Bytes)); err != nil {
			return err
		}
	}
	return nil
}

// anyInContainer reports whether a process runs in a container: only then
// do tables spend a column on containers.
func anyInContainer(procs []core.Attribution) bool {
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
