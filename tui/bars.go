package tui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
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

// bar draws frac (0..1) of width cells filled.
func bar(frac float64, width int, filled, empty lipgloss.Style) string {
	if width <= 0 {
		return ""
	}
	n := int(frac*float64(width) + 0.5)
	n = max(0, min(width, n))
	return paint(filled, strings.Repeat("█", n)) + paint(empty, strings.Repeat("░", width-n))
}

// paint renders text in style; nothing at all when there is no text, not
// a pair of escapes around nothing.
func paint(style lipgloss.Style, text string) string {
	if text == "" {
		return ""
	}
	return style.Render(text)
}

// segment is one owner's booked share of a device's memory.
type segment struct {
	user  string
	share int64 // ppm
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

// fit cuts s (which may hold styles) to width cells and pads it to exactly
// width, so no line ever wraps.
func fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	w := ansi.StringWidth(s)
	if w > width {
		return ansi.Truncate(s, width, "…")
	}
	return s + strings.Repeat(" ", width-w)
}

// cut truncates s to width cells without padding.
func cut(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "…")
}

// frame makes view exactly width × height: lines cut or padded, missing
// lines added, extra ones dropped.
func frame(view string, width, height int) string {
	lines := strings.Split(view, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	var b strings.Builder
	for i := range height {
		if i > 0 {
			b.WriteByte('\n')
		}
		line := ""
		if i < len(lines) {
			line = lines[i]
		}
		b.WriteString(fit(line, width))
	}
	return b.String()
}
