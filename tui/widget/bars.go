package widget

import (
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
)

// Point is one reading of one GPU as the app keeps it: small, since an
// hour of them is kept for every GPU.
type Point struct {
	At   int64  // Unix nanoseconds
	Mem  uint64 // bytes in use
	Util int32  // percent; negative: the GPU did not say
}

func (p Point) Time() time.Time { return time.Unix(0, p.At) }

// Trace is the app's own readings of one GPU, oldest first, up to its
// capacity: the panel's sparkline and the history view's finer grain. Its
// room is taken as readings come, not all at once.
type Trace struct {
	vals     []Point
	capacity int
	next     int // where the next reading goes once vals is full
}

func NewTrace(capacity int) *Trace { return &Trace{capacity: max(1, capacity)} }

func (r *Trace) Push(p Point) {
	if len(r.vals) < r.capacity {
		r.vals = append(r.vals, p)
		return
	}
	r.vals[r.next] = p
	r.next = (r.next + 1) % len(r.vals)
}

// Len is how many readings it holds; at(i) is the i-th oldest.
func (r *Trace) Len() int { return len(r.vals) }

func (r *Trace) At(i int) Point { return r.vals[(r.next+i)%len(r.vals)] }

func (r *Trace) Newest() Point { return r.At(r.Len() - 1) }

// LastUtil returns the utilisation of up to n of the newest readings,
// oldest first.
func (r *Trace) LastUtil(n int) []int {
	n = min(n, r.Len())
	out := make([]int, n)
	for i := range n {
		out[i] = int(r.At(r.Len() - n + i).Util)
	}
	return out
}

var SparkRunes = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws percents (0..100, negative: unknown) as one line of
// block heights; unknown readings are blanks.
func Sparkline(vals []int) string {
	var b strings.Builder
	for _, v := range vals {
		if v < 0 {
			b.WriteByte(' ')
			continue
		}
		i := min(len(SparkRunes)-1, v*len(SparkRunes)/101)
		b.WriteRune(SparkRunes[i])
	}
	return b.String()
}

// BarCells is how many of width cells a bar of frac (0..1) fills.
func BarCells(frac float64, width int) int {
	return max(0, min(width, int(frac*float64(width)+0.5)))
}

// Bar draws a bar of width cells, filled cells "█" and the rest "░", each
// run in its style; nil styles draw it plain, for a row drawn in one style.
func Bar(filled, width int, filledStyle, emptyStyle *lipgloss.Style) string {
	if width <= 0 {
		return ""
	}
	filled = max(0, min(width, filled))
	on, off := strings.Repeat("█", filled), strings.Repeat("░", width-filled)
	if filledStyle == nil || emptyStyle == nil {
		return on + off
	}
	return Paint(*filledStyle, on) + Paint(*emptyStyle, off)
}

// Paint renders text in style; nothing at all when there is no text, not
// a pair of escapes around nothing.
func Paint(style lipgloss.Style, text string) string {
	if text == "" {
		return ""
	}
	return style.Render(text)
}
