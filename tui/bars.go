package tui

import (
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
)

// point is one reading of one GPU as the app keeps it: small, since an
// hour of them is kept for every GPU.
type point struct {
	at   int64  // Unix nanoseconds
	mem  uint64 // bytes in use
	util int32  // percent; negative: the GPU did not say
}

func (p point) time() time.Time { return time.Unix(0, p.at) }

// trace is the app's own readings of one GPU, oldest first, up to its
// capacity: the panel's sparkline and the history view's finer grain. Its
// room is taken as readings come, not all at once.
type trace struct {
	vals     []point
	capacity int
	next     int // where the next reading goes once vals is full
}

func newTrace(capacity int) *trace { return &trace{capacity: max(1, capacity)} }

func (r *trace) push(p point) {
	if len(r.vals) < r.capacity {
		r.vals = append(r.vals, p)
		return
	}
	r.vals[r.next] = p
	r.next = (r.next + 1) % len(r.vals)
}

// len is how many readings it holds; at(i) is the i-th oldest.
func (r *trace) len() int       { return len(r.vals) }
func (r *trace) at(i int) point { return r.vals[(r.next+i)%len(r.vals)] }
func (r *trace) newest() point  { return r.at(r.len() - 1) }

// lastUtil returns the utilisation of up to n of the newest readings,
// oldest first.
func (r *trace) lastUtil(n int) []int {
	n = min(n, r.len())
	out := make([]int, n)
	for i := range n {
		out[i] = int(r.at(r.len() - n + i).util)
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
