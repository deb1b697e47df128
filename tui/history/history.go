// Package history is the app's view of one GPU's last hour, which takes
// the screen: utilisation and memory as graphs, and each booking's span
// with its idle stretches, from what monitors recorded in the ledger and
// the app's own finer readings.
package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// Window is how far back the history view looks.
const Window = time.Hour

// historyGutter is the width of the labels left of the graphs and spans.
const historyGutter = 9

// Keys move about a GPU's history.
type Keys struct {
	Prev, Next, Up, Down, Back key.Binding
}

// View is one GPU's last hour across the screen: utilisation and
// memory as graphs, and under them each booking's span with its owner and
// its idle stretches. What monitors recorded in the ledger (a reading a
// minute) fills the hour at once; the app's own readings since it opened
// (its traces) are finer and take their place where there are any.
type View struct {
	sh     *widget.Shared
	Keys   Keys
	Device int    // the GPU's index
	name   string // its model, as the last reading named it
	Data   report.GPUHistory
	judged time.Time // the end of the newest minute monitors judged
	ReadAt time.Time // when it was last asked for
	Loaded bool
	Err    error
	Offset int // the first booking span shown

	width, height int
	rows          int // lines of each graph
	SpansShown    int // how many spans fit
	version       int // counts the readings of the ledger taken in
	memo          widget.Memo
}

func New(sh *widget.Shared, device int, name string) *View {
	return &View{sh: sh, Device: device, name: name, Keys: Keys{
		Prev: key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/→", "other GPU")),
		Next: key.NewBinding(key.WithKeys("right", "l")),
		Up:   key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/↓", "scroll bookings")),
		Down: key.NewBinding(key.WithKeys("down", "j")),
		Back: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
	}}
}

// Show takes in a reading of the ledger's history of the GPU shown.
func (h *View) Show(msg Msg) {
	if msg.Device != h.Device {
		return // an answer for the GPU shown before
	}
	h.Data, h.Err, h.Loaded = msg.History, msg.Err, true
	h.judged = time.Time{}
	if n := len(h.Data.Minutes); n > 0 {
		h.judged = h.Data.Minutes[n-1].Minute.Add(time.Minute)
	}
	h.version++
	slices.SortStableFunc(h.Data.Bookings, func(a, b report.BookingSpan) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.ID, b.ID))
	})
	h.layout()
}

func (h *View) SetSize(width, height int) {
	h.width, h.height = width, height
	h.layout()
}

// layout splits the height: the title, the two graphs of rows lines each,
// the time axis, then a line per booking span. The graphs share what the
// spans leave, at most twelve lines each, and at least four (two on a
// short terminal): more spans than that leaves room for scroll.
func (h *View) layout() {
	spans := len(h.Data.Bookings)
	least := 4
	if h.height < 2+2*least+2 {
		least = 2
	}
	h.rows = max(least, min(12, (h.height-2-max(spans, 1))/2))
	room := max(1, h.height-2-2*h.rows)
	h.SpansShown = spans
	if spans > room {
		h.SpansShown = max(1, room-1) // a line says what is not shown
	}
	h.Offset = max(0, min(h.Offset, spans-h.SpansShown))
}

// Enable turns on the keys that apply: scrolling only when some spans do
// not fit, other GPUs only when there are some, and esc for back unless
// it closes the help first.
func (h *View) Enable(on bool, gpus int, help bool) {
	h.Keys.Prev.SetEnabled(on && gpus > 1)
	h.Keys.Next.SetEnabled(on && gpus > 1)
	scroll := on && len(h.Data.Bookings) > h.SpansShown
	h.Keys.Up.SetEnabled(scroll)
	h.Keys.Down.SetEnabled(scroll)
	h.Keys.Back.SetEnabled(on && !help)
}

// Scroll moves the spans by one; it reports whether the key was for that.
func (h *View) Scroll(msg tea.KeyMsg) bool {
	switch {
	case key.Matches(msg, h.Keys.Up):
		h.Offset = max(0, h.Offset-1)
	case key.Matches(msg, h.Keys.Down):
		h.Offset = min(max(0, len(h.Data.Bookings)-h.SpansShown), h.Offset+1)
	default:
		return false
	}
	return true
}

func (h *View) ShortHelp() []key.Binding {
	return []key.Binding{h.Keys.Back, h.Keys.Prev, h.Keys.Up}
}

func (h *View) FullHelp() [][]key.Binding {
	return [][]key.Binding{{h.Keys.Back, h.Keys.Prev, h.Keys.Up}}
}

// timeline is the graphs' columns: n columns of step each, the last one
// holding now. Columns start at whole multiples of step, so a column's
// readings stay in it as time passes and the graph moves a column at a
// time.
type timeline struct {
	from time.Time
	step time.Duration
	n    int
}

func newTimeline(now time.Time, n int) timeline {
	n = max(1, n)
	step := time.Duration((int64(Window/time.Second)+int64(n)-1)/int64(n)) * time.Second
	end := now.Truncate(step).Add(step)
	return timeline{from: end.Add(-time.Duration(n) * step), step: step, n: n}
}

// col is the column that holds t; it may lie outside [0, n).
func (tl timeline) col(t time.Time) int {
	d := t.Sub(tl.from)
	if d < 0 {
		return -1 - int((-d-1)/tl.step)
	}
	return int(d / tl.step)
}

func (tl timeline) start(c int) time.Time { return tl.from.Add(time.Duration(c) * tl.step) }

// cols are the columns a stretch [from, to) touches, within the timeline.
func (tl timeline) cols(from, to time.Time) (first, last int) {
	return max(0, tl.col(from)), min(tl.n-1, tl.col(to.Add(-time.Nanosecond)))
}

// unknown marks a column no reading covers.
const unknown = -1.0

// series are a GPU's utilisation and memory in use in each column, as
// fractions (0..1), unknown where nothing was read: the app's own readings
// where it has some, else the ledger's minutes.
func series(tl timeline, tr *widget.Trace, h report.GPUHistory, total uint64) (util, mem []float64) {
	type acc struct {
		utilSum, utilN int
		mem            uint64
		n              int // readings of any kind
	}
	fine, coarse := make([]acc, tl.n), make([]acc, tl.n)
	if tr != nil {
		for i := range tr.Len() {
			p := tr.At(i)
			c := tl.col(p.Time())
			if c < 0 || c >= tl.n {
				continue
			}
			a := &fine[c]
			a.n++
			a.mem = max(a.mem, p.Mem)
			if p.Util >= 0 {
				a.utilSum += int(p.Util)
				a.utilN++
			}
		}
	}
	for _, m := range h.Minutes {
		if total == 0 {
			total = m.MemoryTotal
		}
		first, last := tl.cols(m.Minute, m.Minute.Add(time.Minute))
		for c := first; c <= last; c++ {
			a := &coarse[c]
			a.n++
			a.mem = max(a.mem, m.MemoryUsed)
			if m.Util >= 0 {
				a.utilSum += m.Util
				a.utilN++
			}
		}
	}
	util, mem = make([]float64, tl.n), make([]float64, tl.n)
	for c := range tl.n {
		a := fine[c]
		if a.n == 0 {
			a = coarse[c]
		}
		util[c], mem[c] = unknown, unknown
		if a.utilN > 0 {
			util[c] = float64(a.utilSum) / float64(a.utilN) / 100
		}
		if a.n > 0 && total > 0 {
			mem[c] = float64(a.mem) / float64(total)
		}
	}
	return util, mem
}

// graph draws fractions (0..1, unknown: nothing) as rows lines of block
// characters, the top line first: each line is an eighth-step of height
// per character. A known value is at least a baseline, so that a GPU doing
// nothing reads apart from one nobody watched.
func graph(vals []float64, rows int) []string {
	lines := make([][]rune, rows)
	for r := range lines {
		lines[r] = []rune(strings.Repeat(" ", len(vals)))
	}
	for c, v := range vals {
		if v < 0 {
			continue
		}
		levels := max(1, int(min(v, 1)*float64(rows*8)+0.5))
		for r := range rows {
			fill := levels - (rows-1-r)*8
			switch {
			case fill >= 8:
				lines[r][c] = '█'
			case fill > 0:
				lines[r][c] = widget.SparkRunes[fill-1]
			}
		}
	}
	out := make([]string, rows)
	for r, l := range lines {
		out[r] = string(l)
	}
	return out
}

// spanCell is what a booking's line shows in one column.
type spanCell byte

const (
	spanNone   spanCell = iota
	spanBooked          // booked, not seen idle
	spanIdle            // booked and idle
)

// judgedLag is how far behind now the monitors' newest judged minute may
// be for a booking idle in it to be drawn idle up to now: the minute under
// way is judged only once it is over.
const judgedLag = 2 * time.Minute

// asDrawn is a booking's span as the history draws it: a live one
// reaches now, and one idle in the newest minute the monitors judged
// (judged is its end) is idle up to now.
func asDrawn(b report.BookingSpan, to, judged, now time.Time) report.BookingSpan {
	if b.End.Before(to) {
		return b // ended when read
	}
	b.End = now // live when read: it still is, or the next reading says otherwise
	if n := len(b.Idle); n > 0 && !b.Idle[n-1].To.Before(judged) && now.Sub(judged) <= judgedLag {
		b.Idle = append(slices.Clone(b.Idle[:n-1]), report.Span{From: b.Idle[n-1].From, To: now})
	}
	return b
}

// spanCells lays a booking's span over the columns. Idle wins a column it
// shares with work, so that short stretches still show.
func spanCells(tl timeline, b report.BookingSpan) []spanCell {
	cells := make([]spanCell, tl.n)
	first, last := tl.cols(b.Start, b.End)
	for c := first; c <= last; c++ {
		cells[c] = spanBooked
	}
	for _, s := range b.Idle {
		first, last := tl.cols(s.From, s.To)
		for c := first; c <= last; c++ {
			cells[c] = spanIdle
		}
	}
	return cells
}

// idleLabel is what an idle run of columns says: how long the booking sat
// idle in the stretches it covers.
func idleLabel(tl timeline, b report.BookingSpan, first, last int) string {
	var idle time.Duration
	from, to := tl.start(first), tl.start(last+1)
	for _, s := range b.Idle {
		if s.From.Before(to) && s.To.After(from) {
			idle += s.To.Sub(s.From)
		}
	}
	return " idle " + human.FormatDuration(max(idle, time.Minute).Truncate(time.Minute)) + " "
}

// Lines draws the history in exactly h.height lines of h.width cells.
// tr is the app's own readings of the GPU, total its memory.
func (h *View) Lines(tr *widget.Trace, total uint64, now time.Time) []string {
	tl := newTimeline(now, h.width-historyGutter-1)
	var newest int64
	if tr != nil && tr.Len() > 0 {
		newest = tr.Newest().At
	}
	from := fmt.Sprint(h.version, h.Loaded, newest, total, h.width, h.height, h.Offset, tl.from.Unix())
	return strings.Split(h.memo.Draw(from, func() string { return strings.Join(h.draw(tl, tr, total, now), "\n") }), "\n")
}

func (h *View) draw(tl timeline, tr *widget.Trace, total uint64, now time.Time) []string {
	st := &h.sh.Styles
	out := []string{h.title(tl)}
	spans, rows := len(h.Data.Bookings), h.rows
	util, mem := series(tl, tr, h.Data, total)

	var nowUtil, nowMem string
	if c := tl.n - 1; util[c] >= 0 {
		nowUtil = fmt.Sprintf("now %d%%", int(util[c]*100+0.5))
	}
	if c := tl.n - 1; mem[c] >= 0 && total > 0 {
		nowMem = fmt.Sprintf("now %.0fG", mem[c]*float64(total)/(1<<30))
	}
	memTop := "mem"
	if total > 0 {
		memTop = fmt.Sprintf("mem %.0fG", float64(total)/(1<<30))
	}
	out = append(out, h.graphLines(graph(util, rows), st.UtilGraph, "util 100%", nowUtil, "0%")...)
	out = append(out, h.graphLines(graph(mem, rows), st.MemGraph, memTop, nowMem, "0")...)
	out = append(out, h.axis(tl))

	switch {
	case !h.Loaded:
		out = append(out, st.Faint.Render(widget.Cut("reading the ledger…", h.width)))
	case spans == 0:
		out = append(out, st.Faint.Render(widget.Cut("no bookings of this GPU in the last hour", h.width)))
	default:
		for _, b := range h.Data.Bookings[h.Offset : h.Offset+h.SpansShown] {
			out = append(out, h.spanLine(tl, b, now))
		}
		if h.SpansShown < spans {
			out = append(out, st.Faint.Render(widget.Cut(fmt.Sprintf("%d–%d of %d bookings · ↑/↓ scrolls",
				h.Offset+1, h.Offset+h.SpansShown, spans), h.width)))
		}
	}
	for len(out) < h.height {
		out = append(out, "")
	}
	return out[:h.height]
}

// title names the GPU and the scale, or says why there is nothing.
func (h *View) title(tl timeline) string {
	st := &h.sh.Styles
	left := st.Label.Render(fmt.Sprintf("GPU %d", h.Device))
	if h.name != "" {
		left += "  " + human.Printable(h.name)
	}
	right := st.Faint.Render(fmt.Sprintf("the last hour · a column is %s", human.FormatDuration(tl.step)))
	if h.Err != nil {
		right = st.StatusErr.Render("✗ " + human.Printable(h.Err.Error()))
	}
	return widget.Cut(left+"  "+right, h.width)
}

// graphLines puts a graph's lines right of the gutter, labelled at the top
// (what and its scale), below that the newest value, and at the bottom
// the scale's zero.
func (h *View) graphLines(g []string, style lipgloss.Style, top, now, bottom string) []string {
	st := &h.sh.Styles
	out := make([]string, len(g))
	for i, line := range g {
		label := ""
		switch {
		case i == 0:
			label = widget.Fit(top, historyGutter)
		case i == 1 && now != "":
			label = widget.PadLeft(now, historyGutter)
		case i == len(g)-1 && len(g) > 2:
			label = widget.PadLeft(bottom, historyGutter)
		default:
			label = strings.Repeat(" ", historyGutter)
		}
		out[i] = widget.Cut(st.Faint.Render(label+"│")+style.Render(line), h.width)
	}
	return out
}

// axis is the time line under the graphs: the quarter hours at their
// columns.
func (h *View) axis(tl timeline) string {
	cells := []rune(strings.Repeat("─", tl.n))
	next := 0 // the first column a label may take
	for t := tl.from.Truncate(15 * time.Minute); t.Before(tl.start(tl.n)); t = t.Add(15 * time.Minute) {
		c := tl.col(t)
		if t.Before(tl.from) {
			continue
		}
		label := []rune(t.Local().Format("15:04"))
		if c < next || c+len(label) > tl.n {
			continue
		}
		cells[c] = '┴'
		copy(cells[c+1:], label)
		next = c + len(label) + 2
	}
	return h.sh.Styles.Faint.Render(widget.Cut(strings.Repeat(" ", historyGutter)+"└"+string(cells), h.width))
}

// spanLine is one booking: its id and owner in the gutter, then its span
// in the owner's colour with idle stretches dimmed to "░" and labelled
// with how long they lasted, where the label fits.
func (h *View) spanLine(tl timeline, b report.BookingSpan, now time.Time) string {
	st := &h.sh.Styles
	b = asDrawn(b, h.Data.To, h.judged, now)
	cells := spanCells(tl, b)
	owner := st.Owner(b.Owner)
	if b.UID == h.sh.Me.UID {
		owner = st.Mine
	}
	var line strings.Builder
	line.WriteString(owner.Render(widget.Fit(fmt.Sprintf("#%d %s", b.ID, human.Printable(b.Owner)), historyGutter)))
	line.WriteString(st.Faint.Render("│"))
	for c := 0; c < len(cells); {
		end := c
		for end < len(cells) && cells[end] == cells[c] {
			end++
		}
		n := end - c
		switch cells[c] {
		case spanNone:
			line.WriteString(strings.Repeat(" ", n))
		case spanBooked:
			line.WriteString(owner.Render(strings.Repeat("━", n)))
		case spanIdle:
			label := idleLabel(tl, b, c, end-1)
			if w := len([]rune(label)); w+2 <= n {
				line.WriteString(st.IdleSpan.Render("░") + st.IdleLabel.Render(label) + st.IdleSpan.Render(strings.Repeat("░", n-1-w)))
			} else {
				line.WriteString(st.IdleSpan.Render(strings.Repeat("░", n)))
			}
		}
		c = end
	}
	return widget.Cut(line.String(), h.width)
}

// Msg is one reading of a GPU's history from the ledger.
type Msg struct {
	Device  int
	History report.GPUHistory
	Err     error
}
