package tui

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
)

// segment is one owner's booked share of a device's memory, and when
// seen, the memory their bookings' processes use there.
type segment struct {
	user  string
	share int64 // ppm
	used  uint64
	seen  bool // used is known: the processes of this host's GPUs are
}

// bookedSegments is, per device, each owner's live booked share, in the
// order of their bookings, and the memory the processes counted against
// those bookings use (attrs) when seen: the processes of this host's GPUs
// are known, another host's are not.
func bookedSegments(parts []core.Partition, attrs []admission.Attribution, seen bool, now time.Time) map[int][]segment {
	segs := map[int][]segment{}
	owners := map[uint64]string{}
	for _, p := range parts {
		owners[p.ID] = p.User
		if !p.LiveAt(now) {
			continue
		}
		for _, d := range p.GPUs() { // a booking of several is on each one's bar
			s := segs[d]
			if i := slices.IndexFunc(s, func(s segment) bool { return s.user == p.User }); i >= 0 {
				s[i].share += p.SharePPM
			} else {
				s = append(s, segment{user: p.User, share: p.SharePPM, seen: seen})
			}
			segs[d] = s
		}
	}
	for _, a := range attrs {
		if a.Partition == 0 || (a.Verdict != admission.Booked && a.Verdict != admission.OverBudget) {
			continue // nobody's booking holds it: the bar's own colour
		}
		s := segs[a.Device]
		if i := slices.IndexFunc(s, func(s segment) bool { return s.user == owners[a.Partition] }); i >= 0 {
			s[i].used += a.MemoryUsed
		}
	}
	return segs
}

// upcoming is the next booking ahead on a device: whose, how much, when.
type upcoming struct {
	segment
	start time.Time
}

// nextBookings is, per device, the booking ahead that starts first.
func nextBookings(parts []core.Partition, now time.Time) map[int]upcoming {
	next := map[int]upcoming{}
	for _, p := range parts {
		if !p.Upcoming(now) {
			continue
		}
		for _, d := range p.GPUs() {
			if n, ok := next[d]; !ok || p.Start.Before(n.start) {
				next[d] = upcoming{segment: segment{user: p.User, share: p.SharePPM}, start: p.Start}
			}
		}
	}
	return next
}

// gpuPanel shows every device: a block of three lines each when there is
// room, one compact line each when there is not. Its lines change only
// with a reading or a booking, so they are drawn then and kept.
type gpuPanel struct {
	sh     *shared
	sample gpu.Sample
	segs   map[int][]segment
	next   map[int]upcoming
	traces map[int]*trace // the app's own readings, by device index
	keep   int            // readings each trace keeps
	last   time.Time      // time of the last reading recorded

	drawnFor panelSize // what lines were drawn for; zero: draw again
	lines    []string

	// The other hosts of a ledger many hosts share (hosts.go).
	hosts    []core.HostView
	hostSegs map[string]map[int][]segment
}

// panelSize is the room the panel was drawn in.
type panelSize struct {
	width, lines int
	full         bool
}

// newGPUPanel keeps keep readings of each GPU: its sparklines, and the
// history view's readings since the app opened.
func newGPUPanel(sh *shared, keep int) *gpuPanel {
	return &gpuPanel{sh: sh, traces: map[int]*trace{}, keep: keep}
}

// record takes a reading and adds it to the traces. A reading taken at the
// same instant as the last one adds nothing, so a stopped clock (tests, a
// paused simulation) draws a steady line.
func (p *gpuPanel) record(s gpu.Sample) {
	p.sample, p.drawnFor = s, panelSize{}
	at := s.Time
	if at.IsZero() {
		at = p.sh.now()
	}
	if at.Equal(p.last) {
		return
	}
	p.last = at
	for _, d := range s.Devices {
		r := p.traces[d.Index]
		if r == nil {
			r = newTrace(p.keep)
			p.traces[d.Index] = r
		}
		r.push(point{at: at.UnixNano(), mem: d.MemoryUsed, util: int32(d.Util)})
	}
}

func (p *gpuPanel) setBookings(segs map[int][]segment, next map[int]upcoming) {
	p.segs, p.next, p.drawnFor = segs, next, panelSize{}
}

// gpuLayout is how many lines the panel needs for n devices, and whether
// it can draw full blocks in at most budget lines.
func gpuLayout(n, budget int) (lines int, full bool) {
	switch {
	case n == 0:
		return 1, false
	case 3*n <= budget:
		return 3 * n, true
	default:
		return max(1, min(n, budget)), false
	}
}

// view draws the panel in exactly lines lines of width cells.
func (p *gpuPanel) view(width, lines int, full bool) []string {
	size := panelSize{width: width, lines: lines, full: full}
	if size != p.drawnFor {
		p.lines, p.drawnFor = p.draw(size), size
	}
	return p.lines
}

func (p *gpuPanel) draw(size panelSize) []string {
	st := &p.sh.styles
	devices := p.sample.Devices
	if len(devices) == 0 {
		return []string{cut(st.Faint.Render("no GPU readings yet"), size.width)}
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
		out = append(out, cut(st.Faint.Render(fmt.Sprintf("… %d more GPUs (enlarge the terminal to see them)", len(devices)-shown)), size.width))
	}
	return out
}

func utilFrac(d gpu.DeviceSample) float64 { return float64(max(0, d.Util)) / 100 }

func (p *gpuPanel) spark(index, width int) string {
	r := p.traces[index]
	if r == nil || width <= 0 {
		return ""
	}
	return p.sh.styles.Spark.Render(sparkline(r.lastUtil(width)))
}

func memText(d gpu.DeviceSample) string {
	return fmt.Sprintf("%5.1f/%.1f GiB", float64(d.MemoryUsed)/(1<<30), float64(d.MemoryTotal)/(1<<30))
}

// legend names who booked how much of a device, each in their colour.
func (p *gpuPanel) legend(segs []segment) string {
	st := &p.sh.styles
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
func (p *gpuPanel) utilBar(d gpu.DeviceSample, width int) string {
	st := &p.sh.styles
	return bar(barCells(utilFrac(d), width), width, &st.BarUsed, &st.BarEmpty) + " " + padLeft(reading(d.Util, "%d%%"), 4)
}

func (p *gpuPanel) block(d gpu.DeviceSample, width int) []string {
	st := &p.sh.styles
	segs := p.segs[d.Index]
	title := st.Label.Render(fmt.Sprintf("GPU %d", d.Index)) + "  " + d.Name
	if d.MIG {
		title += "  " + st.Notice.Render("MIG")
	}
	if n, ok := p.next[d.Index]; ok {
		title += "  " + st.Faint.Render("next: ") + st.Owner(n.user).Render(human.Printable(n.user)) +
			st.Faint.Render(" "+human.FormatPercent(n.share)+" at "+startClock(n.start, p.sh.now()))
	}
	right := reading(d.TempC, "%d°C") + "  " + padLeft(reading(d.PowerW, "%.0f W"), 5)
	if len(d.Notes) > 0 {
		title += "  " + st.Faint.Render(strings.Join(d.Notes, "; "))
	}
	title = fit(title, max(0, width-ansi.StringWidth(right)-2)) + "  " + right

	// Wider than 160 columns the bars grow too, a cell for every two.
	barW := max(10, min(max(40, width/2-40), (width-30)/2))
	util := "  util " + p.utilBar(d, barW) + "  " + p.spark(d.Index, width-(7+barW+5+2))
	mem := "  mem  " + memoryBar(st, d.MemoryUsed, d.MemoryTotal, segs, barW) + " " + memText(d) + " used · " + p.legend(segs)
	return []string{title, cut(util, width), cut(mem, width)}
}

// nextNote is a compact row's note of the next booking ahead: " next 14:00".
func (p *gpuPanel) nextNote(device int) string {
	if n, ok := p.next[device]; ok {
		return " next " + startClock(n.start, p.sh.now())
	}
	return ""
}

func (p *gpuPanel) compact(d gpu.DeviceSample, width, nextW int) string {
	st := &p.sh.styles
	// index, util bar, percent, sparkline, memory bar, memory, temperature, power
	tail := " " + memText(d) + " " + reading(d.TempC, "%d°C") + " " + padLeft(reading(d.PowerW, "%.0f W"), 5)
	if d.MIG {
		tail += " MIG"
	}
	if nextW > 0 {
		tail += st.Faint.Render(fit(p.nextNote(d.Index), nextW))
	}
	fixed := 2 + 10 + 5 + 1 + 1 + ansi.StringWidth(tail)
	flex := max(0, width-fixed)
	sparkW := flex * 2 / 5
	memW := max(6, flex-sparkW)
	line := st.Label.Render(fmt.Sprintf("%d ", d.Index)) + p.utilBar(d, 10) +
		" " + fit(p.spark(d.Index, sparkW), sparkW) + " " + memoryBar(st, d.MemoryUsed, d.MemoryTotal, p.segs[d.Index], memW) + tail
	return cut(line, width)
}
