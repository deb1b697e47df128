package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
)

// historyLen is how many readings each sparkline remembers: five minutes at
// the default one-second refresh.
const historyLen = 300

// gpuPanel shows every device: a block of three lines each when there is
// room, one compact line each when there is not.
type gpuPanel struct {
	c       *common
	history map[int]*ring // utilisation by device index
	last    time.Time     // time of the last reading recorded
}

func newGPUPanel(c *common) gpuPanel {
	return gpuPanel{c: c, history: map[int]*ring{}}
}

// record adds a reading to the sparklines. A reading taken at the same
// instant as the last one adds nothing, so a stopped clock (tests, a
// paused simulation) draws a steady line.
func (p *gpuPanel) record(s gpu.Sample) {
	if !s.Time.IsZero() && s.Time.Equal(p.last) {
		return
	}
	p.last = s.Time
	for _, d := range s.Devices {
		r := p.history[d.Index]
		if r == nil {
			r = newRing(historyLen)
			p.history[d.Index] = r
		}
		r.push(d.Util)
	}
}

// height is how many lines the panel needs for n devices in the given style,
// and whether it can draw full blocks in at most budget lines.
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

// View draws the panel in exactly lines lines of width cells.
func (p gpuPanel) View(s gpu.Sample, segs map[int][]segment, width, lines int, full bool) []string {
	st := &p.c.styles
	if len(s.Devices) == 0 {
		return []string{st.Faint.Render("no GPU readings yet")}
	}
	var out []string
	if full {
		for _, d := range s.Devices {
			out = append(out, p.block(d, segs[d.Index], width)...)
		}
		return out
	}
	shown := len(s.Devices)
	if shown > lines {
		shown = lines - 1
	}
	for _, d := range s.Devices[:shown] {
		out = append(out, p.compact(d, segs[d.Index], width))
	}
	if shown < len(s.Devices) {
		out = append(out, st.Faint.Render(fmt.Sprintf("… %d more GPUs (enlarge the terminal to see them)", len(s.Devices)-shown)))
	}
	return out
}

func temp(d gpu.DeviceSample) string {
	if d.TempC < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%d°C", d.TempC)
}

func power(d gpu.DeviceSample) string {
	if d.PowerW < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%3.0f W", d.PowerW)
}

func utilText(d gpu.DeviceSample) string {
	if d.Util < 0 {
		return " n/a"
	}
	return fmt.Sprintf("%3d%%", d.Util)
}

func utilFrac(d gpu.DeviceSample) float64 { return float64(max(0, d.Util)) / 100 }

func (p gpuPanel) spark(index, width int) string {
	r := p.history[index]
	if r == nil || width <= 0 {
		return ""
	}
	return p.c.styles.Spark.Render(sparkline(r.last(width)))
}

func memText(d gpu.DeviceSample) string {
	return fmt.Sprintf("%5.1f/%.1f GiB", float64(d.MemoryUsed)/(1<<30), float64(d.MemoryTotal)/(1<<30))
}

// legend names who booked how much of a device, each in their colour.
func (p gpuPanel) legend(segs []segment) string {
	st := &p.c.styles
	if len(segs) == 0 {
		return st.Faint.Render("nothing booked")
	}
	var total int64
	parts := make([]string, 0, len(segs))
	for _, s := range segs {
		total += s.share
		parts = append(parts, st.Owner(s.user).Render(Printable(s.user)+" "+core.FormatPercent(s.share)))
	}
	return "booked " + core.FormatPercent(total) + ": " + strings.Join(parts, " ")
}

func (p gpuPanel) block(d gpu.DeviceSample, segs []segment, width int) []string {
	st := &p.c.styles
	title := st.Label.Render(fmt.Sprintf("GPU %d", d.Index)) + "  " + d.Name
	if d.MIG {
		title += "  " + st.Notice.Render("MIG")
	}
	right := temp(d) + "  " + power(d)
	if len(d.Notes) > 0 {
		title += "  " + st.Faint.Render(strings.Join(d.Notes, "; "))
	}
	title = fit(title, max(0, width-ansi.StringWidth(right)-2)) + "  " + right

	barW := max(10, min(40, (width-30)/2))
	util := "  util " + bar(utilFrac(d), barW, st.BarUsed, st.BarEmpty) + " " + utilText(d) + "  "
	util += p.spark(d.Index, width-(7+barW+5+2))
	mem := "  mem  " + memoryBar(st, d.MemoryUsed, d.MemoryTotal, segs, barW) + " " + memText(d) + " used · " + p.legend(segs)
	return []string{title, cut(util, width), cut(mem, width)}
}

func (p gpuPanel) compact(d gpu.DeviceSample, segs []segment, width int) string {
	st := &p.c.styles
	// index, util bar, percent, sparkline, memory bar, memory, temperature, power
	tail := fmt.Sprintf(" %s %s %s", memText(d), temp(d), power(d))
	if d.MIG {
		tail += " MIG"
	}
	fixed := 2 + 10 + 5 + 1 + 1 + ansi.StringWidth(tail)
	flex := max(0, width-fixed)
	sparkW := flex * 2 / 5
	memW := max(6, flex-sparkW)
	line := st.Label.Render(fmt.Sprintf("%d ", d.Index)) + bar(utilFrac(d), 10, st.BarUsed, st.BarEmpty) + " " + utilText(d) +
		" " + fit(p.spark(d.Index, sparkW), sparkW) + " " + memoryBar(st, d.MemoryUsed, d.MemoryTotal, segs, memW) + tail
	return cut(line, width)
}
