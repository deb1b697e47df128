// Package gpus is the app's GPU panel: each of this host's GPUs with its
// load, a sparkline of the app's own readings and a memory bar of who
// booked and who uses what, and under them the other hosts of a ledger
// many hosts share.
package gpus

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// Segment is one owner's booked share of a device's memory, and when
// seen, the memory their bookings' processes use there.
type Segment struct {
	user  string
	share int64 // ppm
	used  uint64
	seen  bool // used is known: the processes of this host's GPUs are
}

// BookedSegments is, per device, each owner's live booked share, in the
// order of their bookings, and the memory the processes counted against
// those bookings use (attrs) when seen: the processes of this host's GPUs
// are known, another host's are not.
func BookedSegments(parts []core.Partition, attrs []admission.Attribution, seen bool, now time.Time) map[int][]Segment {
	segs := map[int][]Segment{}
	owners := map[uint64]string{}
	for _, p := range parts {
		owners[p.ID] = p.User
		if !p.LiveAt(now) {
			continue
		}
		for _, d := range p.GPUs() { // a booking of several is on each one's bar
			s := segs[d]
			if i := slices.IndexFunc(s, func(s Segment) bool { return s.user == p.User }); i >= 0 {
				s[i].share += p.SharePPM
			} else {
				s = append(s, Segment{user: p.User, share: p.SharePPM, seen: seen})
			}
			segs[d] = s
		}
	}
	for _, a := range attrs {
		if a.Partition == 0 || (a.Verdict != admission.Booked && a.Verdict != admission.OverBudget) {
			continue // nobody's booking holds it: the bar's own colour
		}
		s := segs[a.Device]
		if i := slices.IndexFunc(s, func(s Segment) bool { return s.user == owners[a.Partition] }); i >= 0 {
			s[i].used += a.MemoryUsed
		}
	}
	return segs
}

// Upcoming is the next booking ahead on a device: whose, how much, when.
type Upcoming struct {
	Segment
	start time.Time
}

// NextBookings is, per device, the booking ahead that starts first.
func NextBookings(parts []core.Partition, now time.Time) map[int]Upcoming {
	next := map[int]Upcoming{}
	for _, p := range parts {
		if !p.Upcoming(now) {
			continue
		}
		for _, d := range p.GPUs() {
			if n, ok := next[d]; !ok || p.Start.Before(n.start) {
				next[d] = Upcoming{Segment: Segment{user: p.User, share: p.SharePPM}, start: p.Start}
			}
		}
	}
	return next
}

// Panel shows every device: a block of three lines each when there is
// room, one compact line each when there is not. Its lines change only
// with a reading or a booking, so they are drawn then and kept.
type Panel struct {
	sh     *widget.Shared
	sample gpu.Sample
	Segs   map[int][]Segment
	next   map[int]Upcoming
	Traces map[int]*widget.Trace // the app's own readings, by device index
	keep   int                   // readings each trace keeps
	last   time.Time             // time of the last reading recorded

	drawnFor panelSize // what lines were drawn for; zero: draw again
	lines    []string

	// The other hosts of a ledger many hosts share (hosts.go).
	hosts    []core.HostView
	HostSegs map[string]map[int][]Segment
}

// panelSize is the room the panel was drawn in.
type panelSize struct {
	width, lines int
	full         bool
}

// New keeps keep readings of each GPU: its sparklines, and the
// history view's readings since the app opened.
func New(sh *widget.Shared, keep int) *Panel {
	return &Panel{sh: sh, Traces: map[int]*widget.Trace{}, keep: keep}
}

// Record takes a reading and adds it to the traces. A reading taken at the
// same instant as the last one adds nothing, so a stopped clock (tests, a
// paused simulation) draws a steady line.
func (p *Panel) Record(s gpu.Sample) {
	p.sample, p.drawnFor = s, panelSize{}
	at := s.Time
	if at.IsZero() {
		at = p.sh.Now()
	}
	if at.Equal(p.last) {
		return
	}
	p.last = at
	for _, d := range s.Devices {
		r := p.Traces[d.Index]
		if r == nil {
			r = widget.NewTrace(p.keep)
			p.Traces[d.Index] = r
		}
		r.Push(widget.Point{At: at.UnixNano(), Mem: d.MemoryUsed, Util: int32(d.Util)})
	}
}

func (p *Panel) SetBookings(segs map[int][]Segment, next map[int]Upcoming) {
	p.Segs, p.next, p.drawnFor = segs, next, panelSize{}
}

// Layout is how many lines the panel needs for n devices, and whether
// it can draw full blocks in at most budget lines.
func Layout(n, budget int) (lines int, full bool) {
	switch {
	case n == 0:
		return 1, false
	case 3*n <= budget:
		return 3 * n, true
	default:
		return max(1, min(n, budget)), false
	}
}

// View draws the panel in exactly lines lines of width cells.
func (p *Panel) View(width, lines int, full bool) []string {
	size := panelSize{width: width, lines: lines, full: full}
	if size != p.drawnFor {
		p.lines, p.drawnFor = p.draw(size), size
	}
	return p.lines
}

func (p *Panel) draw(size panelSize) []string {
	st := &p.sh.Styles
	devices := p.sample.Devices
	if len(devices) == 0 {
		return []string{widget.Cut(st.Faint.Render("no GPU readings yet"), size.width)}
	}
	var out []string
	if size.full {
		for _, d := range devices {
			out = append(out, p.block(d, size.width)...)
		}
		return out
	}
	shown := len(devices)
	if shown > size.lines {
		shown = size.lines - 1
	}
	// Every row leaves room for the widest "next" note, so that the bars
	// line up.
	nextW := 0
	for _, d := range devices[:shown] {
		nextW = max(nextW, ansi.StringWidth(p.nextNote(d.Index)))
	}
	for _, d := range devices[:shown] {
		out = append(out, p.compact(d, size.width, nextW))
	}
	if shown < len(devices) {
		out = append(out, widget.Cut(st.Faint.Render(fmt.Sprintf("… %d more GPUs (enlarge the terminal to see them)", len(devices)-shown)), size.width))
	}
	return out
}

func utilFrac(d gpu.DeviceSample) float64 { return float64(max(0, d.Util)) / 100 }

func (p *Panel) spark(index, width int) string {
	r := p.Traces[index]
	if r == nil || width <= 0 {
		return ""
	}
	return p.sh.Styles.Spark.Render(widget.Sparkline(r.LastUtil(width)))
}

func memText(d gpu.DeviceSample) string {
	return fmt.Sprintf("%5.1f/%.1f GiB", float64(d.MemoryUsed)/(1<<30), float64(d.MemoryTotal)/(1<<30))
}

// legend names who booked how much of a device, each in their colour.
func (p *Panel) legend(segs []Segment) string {
	st := &p.sh.Styles
	if len(segs) == 0 {
		return st.Faint.Render("nothing booked")
	}
	var total int64
	parts := make([]string, 0, len(segs))
	for _, s := range segs {
		total += s.share
		parts = append(parts, st.Owner(s.user).Render(human.Printable(s.user)+" "+human.FormatPercent(s.share)))
	}
	return "booked " + human.FormatPercent(total) + ": " + strings.Join(parts, " ")
}

// utilBar is a device's utilisation: the bar and the percent.
func (p *Panel) utilBar(d gpu.DeviceSample, width int) string {
	st := &p.sh.Styles
	return widget.Bar(widget.BarCells(utilFrac(d), width), width, &st.BarUsed, &st.BarEmpty) + " " + widget.PadLeft(widget.Reading(d.Util, "%d%%"), 4)
}

func (p *Panel) block(d gpu.DeviceSample, width int) []string {
	st := &p.sh.Styles
	segs := p.Segs[d.Index]
	title := st.Label.Render(fmt.Sprintf("GPU %d", d.Index)) + "  " + d.Name
	if d.MIG {
		title += "  " + st.Notice.Render("MIG")
	}
	if n, ok := p.next[d.Index]; ok {
		title += "  " + st.Faint.Render("next: ") + st.Owner(n.user).Render(human.Printable(n.user)) +
			st.Faint.Render(" "+human.FormatPercent(n.share)+" at "+widget.StartClock(n.start, p.sh.Now()))
	}
	right := widget.Reading(d.TempC, "%d°C") + "  " + widget.PadLeft(widget.Reading(d.PowerW, "%.0f W"), 5)
	if len(d.Notes) > 0 {
		title += "  " + st.Faint.Render(strings.Join(d.Notes, "; "))
	}
	title = widget.Fit(title, max(0, width-ansi.StringWidth(right)-2)) + "  " + right

	// Wider than 160 columns the bars grow too, a cell for every two.
	barW := max(10, min(max(40, width/2-40), (width-30)/2))
	util := "  util " + p.utilBar(d, barW) + "  " + p.spark(d.Index, width-(7+barW+5+2))
	mem := "  mem  " + memoryBar(st, d.MemoryUsed, d.MemoryTotal, segs, barW) + " " + memText(d) + " used · " + p.legend(segs)
	return []string{title, widget.Cut(util, width), widget.Cut(mem, width)}
}

// nextNote is a compact row's note of the next booking ahead: " next 14:00".
func (p *Panel) nextNote(device int) string {
	if n, ok := p.next[device]; ok {
		return " next " + widget.StartClock(n.start, p.sh.Now())
	}
	return ""
}

func (p *Panel) compact(d gpu.DeviceSample, width, nextW int) string {
	st := &p.sh.Styles
	// index, util bar, percent, sparkline, memory bar, memory, temperature, power
	tail := " " + memText(d) + " " + widget.Reading(d.TempC, "%d°C") + " " + widget.PadLeft(widget.Reading(d.PowerW, "%.0f W"), 5)
	if d.MIG {
		tail += " MIG"
	}
	if nextW > 0 {
		tail += st.Faint.Render(widget.Fit(p.nextNote(d.Index), nextW))
	}
	fixed := 2 + 10 + 5 + 1 + 1 + ansi.StringWidth(tail)
	flex := max(0, width-fixed)
	sparkW := flex * 2 / 5
	memW := max(6, flex-sparkW)
	line := st.Label.Render(fmt.Sprintf("%d ", d.Index)) + p.utilBar(d, 10) +
		" " + widget.Fit(p.spark(d.Index, sparkW), sparkW) + " " + memoryBar(st, d.MemoryUsed, d.MemoryTotal, p.Segs[d.Index], memW) + tail
	return widget.Cut(line, width)
}
