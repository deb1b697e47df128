package tui

import (
	"slices"
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

// memoryBar draws a device's memory as one bar: each owner's bookings
// are a run of cells in their colour, solid ("█") as far as their
// processes use memory and "▒" for the rest; "░" is free and unbooked.
// Memory in use that no booking holds (another user's unbooked process,
// the part of a booking's use beyond its share) is "█" in a colour of its
// own, never a person's: after the runs, and over the runs' unused tails
// when it does not fit there. Where who uses what is not known (another
// host's GPUs), the used cells fill the runs from the left.
// The characters alone tell used from booked when there is no colour.
func memoryBar(st *Styles, used, total uint64, segs []segment, width int) string {
	if width <= 0 {
		return ""
	}
	usedCells := 0
	if total > 0 {
		usedCells = int(float64(used)/float64(total)*float64(width) + 0.5)
	}
	if len(segs) > 0 && !slices.ContainsFunc(segs, func(s segment) bool { return !s.seen }) {
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
func runCells(segs []segment, width int) []int {
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
func attributedBar(st *Styles, usedCells int, total uint64, segs []segment, width int) string {
	cells := runCells(segs, width)
	owned, booked := make([]int, len(segs)), 0
	ownedAll := 0
	for i, s := range segs {
		owned[i] = min(cells[i], barCells(float64(s.used)/float64(max(total, 1)), width))
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
		b.WriteString(paint(st.Owner(s.user), strings.Repeat("█", owned[i])+strings.Repeat("▒", cells[i]-owned[i]-spill[i])))
		b.WriteString(paint(st.BarHot, strings.Repeat("█", spill[i])))
	}
	b.WriteString(paint(st.BarHot, strings.Repeat("█", hotRest)))
	b.WriteString(paint(st.BarEmpty, strings.Repeat("░", rest-hotRest)))
	return b.String()
}
