package view

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/report"
)

// reportBarWidth is how many cells the largest row's bar fills.
const reportBarWidth = 16

// WriteReport prints a usage report as a table for `chronos report`: a row
// per user, group or GPU with a bar of its booked GPU-hours, to the scale
// of the largest, solid where they were used.
func WriteReport(w io.Writer, r report.Report, now time.Time) error {
	since := "since the ledger began"
	if !r.From.IsZero() {
		since = "since " + human.FormatTime(r.From, now)
	}
	if len(r.Rows) == 0 {
		_, err := fmt.Fprintf(w, "No GPU use recorded %s.\n", since)
		return err
	}
	fmt.Fprintf(w, "GPU use %s, by %s. GPU-hours: booked share-weighted (50%% of a GPU for 1h is 0.5), used as measured.\n\n", since, r.By)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\t\tBOOKED\tUSED\tIDLE\tUNBOOKED\tBOOKINGS\tRECLAIMED\tEXPIRED\tFORCED\n", strings.ToUpper(string(r.By)))
	most := 0.0
	for _, row := range r.Rows {
		most = max(most, row.BookedHours)
	}
	line := func(key string, row report.Row, bar string) {
		unbooked := "-"
		if row.UnbookedHours != nil {
			unbooked = gpuHours(*row.UnbookedHours)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", key, bar, gpuHours(row.BookedHours), gpuHours(row.UsedHours),
			gpuHours(row.IdleHours), unbooked, row.Bookings, row.Reclaimed, row.Expired, row.Forced)
	}
	for _, row := range r.Rows {
		bar := ""
		if most > 0 {
			booked := barCells(row.BookedHours/most, reportBarWidth)
			used := min(booked, barCells(row.UsedHours/most, reportBarWidth))
			bar = strings.Repeat("█", used) + strings.Repeat("▒", booked-used)
		}
		line(human.Printable(row.Key), row, bar)
	}
	line("TOTAL", r.Total, "")
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nbar: GPU-hours booked, █ used, ▒ not used. IDLE: booked hours the booking sat idle. UNBOOKED: used with no booking. FORCED: expired with processes still running, signalled.")
	return err
}

// barCells is how many of width cells a bar of frac (0..1) fills.
func barCells(frac float64, width int) int {
	return max(0, min(width, int(frac*float64(width)+0.5)))
}

// gpuHours prints GPU-hours to a hundredth.
func gpuHours(h float64) string { return strconv.FormatFloat(h, 'f', 2, 64) }

// WriteReportCSV prints a usage report's rows as CSV, one header line
// first, figures in full precision; unbooked use is empty by GPU.
func WriteReportCSV(w io.Writer, r report.Report) error {
	out := csv.NewWriter(w)
	_ = out.Write([]string{string(r.By), "booked_gpu_hours", "used_gpu_hours", "idle_gpu_hours", "unbooked_gpu_hours", "bookings", "reclaimed", "expired", "forced"})
	number := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	for _, row := range r.Rows {
		unbooked := ""
		if row.UnbookedHours != nil {
			unbooked = number(*row.UnbookedHours)
		}
		_ = out.Write([]string{row.Key, number(row.BookedHours), number(row.UsedHours), number(row.IdleHours), unbooked,
			strconv.Itoa(row.Bookings), strconv.Itoa(row.Reclaimed), strconv.Itoa(row.Expired), strconv.Itoa(row.Forced)})
	}
	out.Flush()
	return out.Error()
}
