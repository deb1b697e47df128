package view

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/report"
)

// WriteUsage prints two tables, each within 80 columns: what each user
// holds now, what the quotas leave and their fair share; then their GPU-hours
// of the last 7 and 30 days as `chronos report` counts them.
func WriteUsage(w io.Writer, users []report.UserUsage) error {
	if len(users) == 0 {
		_, err := fmt.Fprintln(w, "No use in the last 30 days.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tGPUS NOW\tAHEAD\tGPUS LEFT\tGPU-H LEFT\tUSAGE GPU-H\tFAIR-SHARE\tWAITING")
	for _, u := range users {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f\t%.3f\t%d\n", human.Printable(u.User),
			number(u.GPUs), number(u.Ahead), left(u.GPUsLeft, 2), HoursLeft(u.HoursLeft), u.Usage, u.Factor, u.Waiting)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nGPU-hours of the last 7 and 30 days (as chronos report counts them):")
	fmt.Fprintln(tw, "USER\tBOOKED 7D\t30D\tUSED 7D\t30D\tIDLE 7D\t30D\tUNBOOKED 7D\t30D")
	for _, u := range users {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", human.Printable(u.User),
			u.Hours7d, u.Hours30d, u.Used7d, u.Used30d, u.Idle7d, u.Idle30d, u.Unbooked7d, u.Unbooked30d)
	}
	return tw.Flush()
}

// number prints GPU-equivalents to the hundredth, as shares are booked
// (0.55), without trailing zeros: sums of shares carry float noise
// (0.1+0.2 is 0.30000000000000004).
func number(f float64) string { return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64) }

// left prints what a quota leaves, rounded down to decimals places: never
// more than is left (0.25 GPUs left shows 0.25, not 0.2; 16.875
// GPU-hours 16.87).
func left(f *float64, decimals int) string {
	if f == nil {
		return "no limit"
	}
	scale := math.Pow(10, float64(decimals))
	// A hair above the rounding, for sums of shares that carry float
	// noise (0.3 left computed as 0.29999999999999993).
	down := math.Floor(*f*scale+1e-6) / scale
	return strconv.FormatFloat(down, 'f', -1, 64) // as shares are booked
}

// HoursLeft is what an hours quota leaves, to the hundredth (0.09 of a
// GPU-hour is not 0.0), with a decimal point as the other hours columns.
func HoursLeft(f *float64) string {
	s := left(f, 2)
	if f != nil && !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
