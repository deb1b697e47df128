package tui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// ring keeps the last readings of one number, oldest first when read.
type ring struct {
	vals []int
	next int
	full bool
}

func newRing(n int) *ring { return &ring{vals: make([]int, n)} }

func (r *ring) push(v int) {
	r.vals[r.next] = v
	r.next = (r.next + 1) % len(r.vals)
	if r.next == 0 {
		r.full = true
	}
}

// last returns up to n of the newest readings, oldest first.
func (r *ring) last(n int) []int {
	size := r.next
	if r.full {
		size = len(r.vals)
	}
	n = min(n, size)
	out := make([]int, n)
	for i := range n {
		out[i] = r.vals[(r.next-n+i+len(r.vals))%len(r.vals)]
	}
	return out
}

var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// sparkline draws percents (0..100, negative: unknown) as one line of
// block heights; unknown readings are blanks.
func sparkline(vals []int) string {
	var b strings.Builder
	for _, v := range vals {
		if v < 0 {
			b.WriteByte(' ')
			continue
		}
		i := min(len(sparkRunes)-1, v*len(sparkRunes)/101)
		b.WriteRune(sparkRunes[i])
	}
	return b.String()
}

// barCells is how many of width cells a bar of frac (0..1) fills.
func barCells(frac float64, width int) int {
	return max(0, min(width, int(frac*float64(width)+0.5)))
}

// bar draws a bar of width cells, filled cells "█" and the rest "░", each
// run in its style; nil styles draw it plain, for a row drawn in one style.
func bar(filled, width int, filledStyle, emptyStyle *lipgloss.Style) string {
	if width <= 0 {
		return ""
	}
	filled = max(0, min(width, filled))
	on, off := strings.Repeat("█", filled), strings.Repeat("░", width-filled)
	if filledStyle == nil || emptyStyle == nil {
		return on + off
	}
	return paint(*filledStyle, on) + paint(*emptyStyle, off)
}

// paint renders text in style; nothing at all when there is no text, not
// a pair of escapes around nothing.
func paint(style lipgloss.Style, text string) string {
	if text == "" {
		return ""
	}
	return style.Render(text)
}

// memoryBar draws a device's memory as one bar: each booking is a run of
// cells in its owner's colour, and the cells up to the memory in use are
// solid. So "█" is used memory, "▒" booked but unused, "░" free and
// unbooked; used memory past the booked runs shows in the warning colour.
// The characters alone tell used from booked when there is no colour.
func memoryBar(st *Styles, used, total uint64, segs []segment, width int) string {
	if width <= 0 {
		return ""
	}
	usedCells := 0
	if total > 0 {
		usedCells = int(float64(used)/float64(total)*float64(width) + 0.5)
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
