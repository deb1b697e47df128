package gpus

import (
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/chronos-gpu/chronos/tui/widget"
)

// memoryBar draws a device's memory as one bar: each owner's bookings
// are a run of cells in their colour, solid ("█") as far as their
// processes use memory and "▒" for the rest; "░" is free and unbooked.
// Memory in use that no booking holds (another user's unbooked process,
// the part of a booking's use beyond its share) is "█" in a colour of its
// own, never a person's: after the runs, and over the runs' unused tails
// when it does not fit there. Where who uses what is not known (another
// host's GPUs), the used cells fill the runs from the left.
// The characters alone tell used from booked when there is no colour.
func memoryBar(st *widget.Styles, used, total uint64, segs []Segment, width int) string {
	if width <= 0 {
		return ""
	}
	usedCells := 0
	if total > 0 {
		usedCells = int(float64(used)/float64(total)*float64(width) + 0.5)
	}
	if len(segs) > 0 && !slices.ContainsFunc(segs, func(s Segment) bool { return !s.seen }) {
		return attributedBar(st, usedCells, total, segs, width)
	}
	var b strings.Builder
	cell := 0
	run := func(n int, style lipgloss.Style, usedCh, freeCh string) {
		n = min(n, width-cell)
		if n <= 0 {
			return
		}
		// One escape sequence for the run, used and unused cells alike.
		solid := max(0, min(n, usedCells-cell))
		b.WriteString(style.Render(strings.Repeat(usedCh, solid) + strings.Repeat(freeCh, n-solid)))
		cell += n
	}
	var acc int64
	for _, s := range segs {
		// Cells from cumulative shares, so rounding never adds up past the bar.
		start := int(float64(acc) / 1e6 * float64(width))
		acc += s.share
		end := int(float64(acc)/1e6*float64(width) + 0.5)
		run(end-start, st.Owner(s.user), "█", "▒")
	}
	rest := width - cell
	solid := max(0, min(rest, usedCells-cell))
	run(solid, st.BarHot, "█", "█")
	run(rest-solid, st.BarEmpty, "░", "░")
	return b.String()
}

// runCells is how many cells each segment's run takes of width: from
// cumulative shares, so rounding never adds up past the bar.
func runCells(segs []Segment, width int) []int {
	cells := make([]int, len(segs))
	var acc int64
	for i, s := range segs {
		start := int(float64(acc) / 1e6 * float64(width))
		acc += s.share
		end := int(float64(acc)/1e6*float64(width) + 0.5)
		cells[i] = max(0, min(end, width)-start)
	}
	return cells
}

// attributedBar is memoryBar where each owner's use is known.
func attributedBar(st *widget.Styles, usedCells int, total uint64, segs []Segment, width int) string {
	cells := runCells(segs, width)
	owned, booked := make([]int, len(segs)), 0
	ownedAll := 0
	for i, s := range segs {
		owned[i] = min(cells[i], widget.BarCells(float64(s.used)/float64(max(total, 1)), width))
		ownedAll += owned[i]
		booked += cells[i]
	}
	hot := max(0, usedCells-ownedAll)
	rest := max(0, width-booked)
	hotRest := min(hot, rest)
	// What does not fit after the runs takes their unused tails, the last
	// run's first.
	spill := make([]int, len(segs))
	for i, left := len(segs)-1, hot-hotRest; i >= 0 && left > 0; i-- {
		spill[i] = min(left, cells[i]-owned[i])
		left -= spill[i]
	}
	var b strings.Builder
	for i, s := range segs {
		b.WriteString(widget.Paint(st.Owner(s.user), strings.Repeat("█", owned[i])+strings.Repeat("▒", cells[i]-owned[i]-spill[i])))
		b.WriteString(widget.Paint(st.BarHot, strings.Repeat("█", spill[i])))
	}
	b.WriteString(widget.Paint(st.BarHot, strings.Repeat("█", hotRest)))
	b.WriteString(widget.Paint(st.BarEmpty, strings.Repeat("░", rest-hotRest)))
	return b.String()
}
