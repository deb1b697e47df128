package tui

import (
	"fmt"
	"io"
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
	fmt.Fprintln(tw, "ID\tOWNER\tGPU\tSHARE\tMEMORY\tLEFT\tEXPIRES\tSTATE")
	for _, p := range parts {
		left := "-"
		if p.LiveAt(now) {
			left = Countdown(p.Expires.Sub(now))
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.User, p.Device,
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
