package gpus

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// The other hosts of a ledger many hosts share are drawn under this host's
// GPUs: a line naming each host, then a compact line per GPU, from what its
// monitor publishes; a host none of whose monitors publishes shows its GPUs
// as last cached in the ledger, marked as not seen (its bookings stand).

// HostSegments is, for each other host, each owner's live booked share of
// each of its GPUs.
func HostSegments(parts []core.Partition, c *core.Client, now time.Time) map[string]map[int][]Segment {
	byHost := map[string][]core.Partition{}
	for _, p := range parts {
		if !c.OnThisHost(p.Partition) {
			byHost[p.Host] = append(byHost[p.Host], p)
		}
	}
	out := make(map[string]map[int][]Segment, len(byHost))
	for h, ps := range byHost {
		out[h] = BookedSegments(ps, nil, false, now)
	}
	return out
}

// SetHosts takes the other hosts and their bookings.
func (p *Panel) SetHosts(hosts []core.HostView, segs map[string]map[int][]Segment) {
	p.hosts, p.HostSegs = hosts, segs
}

// HostsLines is how many lines the other hosts take in full.
func HostsLines(hosts []core.HostView) int {
	n := 0
	for _, h := range hosts {
		n += 1 + len(hostDevices(h))
	}
	return n
}

// hostDevices are a host's GPUs: its monitor's last reading, else the
// inventory cached in the ledger, with no readings.
func hostDevices(h core.HostView) []gpu.DeviceSample {
	if h.Live() {
		return h.Status.Devices
	}
	out := make([]gpu.DeviceSample, 0, len(h.Inventory.Devices))
	for _, d := range h.Inventory.Devices {
		out = append(out, gpu.DeviceSample{Device: gpu.Device{Index: d.Index, UUID: d.UUID, Name: d.Name, MemoryTotal: d.MemoryTotal},
			Util: procfs.NA, MemUtil: procfs.NA, TempC: procfs.NA, PowerW: -1})
	}
	return out
}

// HostsView draws the other hosts in at most lines lines of width cells.
// When they do not all fit, nothing vanishes unsaid: each host shown keeps
// its title line, the GPU lines left are shared out among the hosts in
// turn, a title says how many of its GPUs are not shown, and a last line
// counts the hosts with no room at all.
func (p *Panel) HostsView(width, lines int) []string {
	st := &p.sh.Styles
	hosts, segs := p.hosts, p.HostSegs
	devs := make([][]gpu.DeviceSample, len(hosts))
	for i, h := range hosts {
		devs[i] = hostDevices(h)
	}
	shown := len(hosts)
	if shown > lines {
		shown = max(0, lines-1) // the last line counts the rest
	}
	spare := lines - shown
	if shown < len(hosts) {
		spare-- // for the line that counts the rest
	}
	rows := make([]int, shown) // GPU lines each host shown gets
	for more := true; spare > 0 && more; {
		more = false
		for i := range rows {
			if spare > 0 && rows[i] < len(devs[i]) {
				rows[i]++
				spare--
				more = true
			}
		}
	}
	var out []string
	for i, h := range hosts[:shown] {
		hidden := ""
		if n := len(devs[i]) - rows[i]; n > 0 {
			hidden = fmt.Sprintf("+%d more %s not shown (enlarge the terminal)", n, widget.Plural(n, "GPU", "GPUs"))
		}
		title := st.Label.Render(human.Printable(h.Host))
		switch {
		case !h.Live():
			sep := "  "
			if hidden != "" {
				title, sep = title+"  "+st.Faint.Render(hidden), " · "
			}
			title += sep + st.Notice.Render("not seen: no chronos monitor publishes from it (host down?); its bookings stand")
		case h.Status.Simulated:
			title += st.Faint.Render(fmt.Sprintf("  simulated · %d GPUs", len(devs[i])))
		default:
			title += st.Faint.Render(fmt.Sprintf("  %s · %d GPUs", human.Printable(h.Status.Backend), len(devs[i])))
		}
		if hidden != "" && h.Live() {
			title += st.Faint.Render(" · " + hidden)
		}
		out = append(out, widget.Cut(title, width))
		for _, d := range devs[i][:rows[i]] {
			out = append(out, p.remote(h.Host, d, segs[h.Host][d.Index], h.Live(), width))
		}
	}
	if rest := hosts[shown:]; len(rest) > 0 && lines > 0 {
		gpus := 0
		for i := range rest {
			gpus += len(devs[shown+i])
		}
		what := "more"
		if shown == 0 {
			what = "other"
		}
		out = append(out, widget.Cut(st.Faint.Render(fmt.Sprintf("… %d %s %s, %d GPUs (enlarge the terminal to see them)",
			len(rest), what, widget.Plural(len(rest), "host", "hosts"), gpus)), width))
	}
	return out
}

// remote is one GPU of another host on one line: its name, load and memory
// with the bookings on it.
func (p *Panel) remote(host string, d gpu.DeviceSample, segs []Segment, live bool, width int) string {
	st := &p.sh.Styles
	name := st.Label.Render(fmt.Sprintf("  %s ", human.Printable(human.FormatGPU(host, d.Index))))
	if !live {
		line := name + memoryBar(st, 0, d.MemoryTotal, segs, 20) + " " + st.Faint.Render(fmt.Sprintf("%s · %.1f GiB · no reading", human.Printable(d.Name), float64(d.MemoryTotal)/(1<<30)))
		return widget.Cut(line, width)
	}
	tail := " " + memText(d) + " " + widget.Reading(d.TempC, "%d°C")
	fixed := ansi.StringWidth(name) + 10 + 5 + 1 + ansi.StringWidth(tail)
	memW := max(6, min(40, width-fixed))
	line := name + p.utilBar(d, 10) + " " + memoryBar(st, d.MemoryUsed, d.MemoryTotal, segs, memW) + tail
	return widget.Cut(strings.TrimRight(line, " "), width)
}
