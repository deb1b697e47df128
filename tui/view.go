package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/tui/gpus"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// layout splits the height: header (with the backend's note, the ledger's
// warnings and the person's notice when there are), GPU panel, other
// hosts' GPUs, tab line, body (a table, the form or the help) and the two
// footer lines. A GPU's history takes the place of all between header and
// footer.
type layout struct {
	header, gpus, hosts, body int
	fullGPUs                  bool
	history                   int
}

func (m *Model) layout() layout {
	l := layout{header: 1 + len(m.data.Warnings)}
	if m.opts.Notice != "" {
		l.header++
	}
	if len(m.notices) > 0 {
		l.header += len(m.noticeLines())
	}
	l.history = max(1, m.height-l.header-2)
	rest := m.height - l.header - 1 /* tabs */ - 2 /* status, help */
	// The tables are what people act on: the GPU panel shrinks to compact
	// rows before they get less than half the room.
	minBody := max(6, rest/2)
	if m.mode == booking {
		minBody = max(minBody, m.form.Height(formWidth(m.width)))
	}
	// Other hosts' GPUs take what this host's leave, a line each.
	hosts := gpus.HostsLines(m.data.Hosts)
	l.gpus, l.fullGPUs = gpus.Layout(len(m.data.Sample.Devices), rest-minBody-min(hosts, 2))
	l.hosts = max(0, min(hosts, rest-minBody-l.gpus))
	l.body = max(1, rest-l.gpus-l.hosts)
	return l
}

// View draws the screen from the model alone; countdowns come from the
// stored deadlines and the clock. No line is wider than the terminal, and
// lines are not padded: the renderer clears what is right of a short line.
func (m *Model) View() string {
	if m.tooSmall() {
		msg := fmt.Sprintf("Terminal too small: %d×%d.\nChronos needs at least %d×%d.\n\nq quits.", m.width, m.height, minWidth, minHeight)
		return widget.Frame(strings.Join(widget.Wrap(msg, m.width, m.height), "\n"), m.width, m.height)
	}
	st := &m.sh.Styles
	now := m.sh.Now()
	l := m.layout()
	lines := make([]string, 0, m.height)
	lines = append(lines, m.headerView(now))
	if m.opts.Notice != "" {
		lines = append(lines, widget.Cut(st.Notice.Render(human.Printable(m.opts.Notice)), m.width))
	}
	for _, w := range m.data.Warnings {
		lines = append(lines, widget.Cut(st.Notice.Render("⚠ "+human.Printable(w)), m.width))
	}
	if len(m.notices) > 0 {
		lines = append(lines, m.noticeLines()...)
	}
	var body []string
	rows := l.body
	switch {
	case m.mode == viewingHistory:
		rows, body = l.history, m.historyLines(now)
		if m.fullHelp {
			body = m.helpLines()
		}
	case m.mode == booking:
		body = cutAll(strings.Split(m.form.View(formWidth(m.width)), "\n"), m.width)
	case m.fullHelp:
		body = m.helpLines()
	default:
		body = m.current().View(now) // a tab's lines fit already
	}
	if m.mode != viewingHistory {
		lines = append(lines, m.gpus.View(m.width, l.gpus, l.fullGPUs)...)
		lines = append(lines, m.gpus.HostsView(m.width, l.hosts)...)
		lines = append(lines, m.tabsView())
	}
	// A long status wraps upward into the body's empty last lines, when it
	// has some, so that nothing on screen moves for it.
	free := 0
	for i := rows - 1; i >= 0 && i >= len(body) && free < statusMaxLines-1; i-- {
		free++
	}
	status := m.statusLines(1 + free)
	for i := range rows - (len(status) - 1) {
		line := ""
		if i < len(body) {
			line = body[i]
		}
		lines = append(lines, line)
	}
	lines = append(lines, status...)
	lines = append(lines, m.footer())
	return strings.Join(lines, "\n")
}

// Most lines a wrapped status or notice takes: the rest is cut with "…".
const (
	statusMaxLines = 3
	noticeMaxLines = 3
)

// formWidth is the width of the new-booking form on a screen width wide.
func formWidth(width int) int { return min(width, 90) }

// helpLines is the full help, in place of the body: the keys, then what
// the bars and the states mean.
func (m *Model) helpLines() []string {
	lines := append([]string{m.sh.Styles.Label.Render("Keys")}, strings.Split(m.help.FullHelpView(m.FullHelp()), "\n")...)
	return cutAll(append(lines, m.legendLines()...), m.width)
}

// legendLines say what the GPU panel's glyphs and colours and the bookings'
// states mean.
func (m *Model) legendLines() []string {
	st := &m.sh.Styles
	f := st.Faint.Render
	return []string{
		"",
		st.Label.Render("Legend"),
		"mem   █ memory in use · ▒ booked, not in use · ░ free · " + st.BarHot.Render("█") + " in use, not booked",
		"      " + f("booked runs in the owner's colour, █ only where their own processes use it"),
		"util  █ in use · ▁▂▃▅▇█ the last readings",
		"STATE live · " + st.EndingSoon.Render("ending soon") + " · " + st.IdleLabel.Render("idle") + f(" (none of its processes works)"),
		"      " + f("upcoming, starts 14:00") + " · " + st.Ended.Render("ended (faded)"),
	}
}

// historyLines draws the GPU history with the app's own readings of it.
func (m *Model) historyLines(now time.Time) []string {
	h := m.history
	var total uint64
	for _, d := range m.data.Sample.Devices {
		if d.Index == h.Device {
			total = d.MemoryTotal
		}
	}
	return h.Lines(m.gpus.Traces[h.Device], total, now)
}

// noticeLines are the notice line, wrapped: the person's newest notice,
// and how many more wait behind it.
func (m *Model) noticeLines() []string {
	n := m.notices[len(m.notices)-1]
	mark := "⚠" // a warning of the monitors'
	if n.Kind == domain.EventCreated {
		mark = "✓" // the app's own news: a request it waited for was booked
	}
	text := fmt.Sprintf("%s %s your booking #%d: %s", mark, n.Time.Local().Format("15:04"), n.Partition, human.Printable(n.Detail))
	if more := len(m.notices) - 1; more > 0 {
		text += fmt.Sprintf(" (+%d more)", more)
	}
	return renderAll(m.sh.Styles.NoticeLine, widget.Wrap(text, m.width, noticeMaxLines))
}

// renderAll styles each line apart, so that every line of wrapped text
// ends its own styling.
func renderAll(st lipgloss.Style, lines []string) []string {
	for i, l := range lines {
		lines[i] = st.Render(l)
	}
	return lines
}

// headerView is the top line, redrawn when the minute changes.
func (m *Model) headerView(now time.Time) string {
	clock := now.Format("15:04")
	return m.memos.header.Draw(fmt.Sprint(clock, m.width, m.data.Sample.Simulated), func() string { return m.drawHeader(clock) })
}

func (m *Model) drawHeader(clock string) string {
	st := &m.sh.Styles
	backend := ""
	if m.opts.Backend != nil {
		backend = st.NVML.Render(strings.ToUpper(m.opts.Backend.Name())) // NVML or DRM
	}
	if m.opts.Backend == nil || m.opts.Backend.Simulated() || m.data.Sample.Simulated {
		backend = st.Simulated.Render(" SIMULATED GPUs ")
	}
	who := m.sh.Me.User
	if m.sh.Me.Root() {
		who += " (root)"
	}
	parts := []string{st.Title.Render("Chronos"), backend}
	for _, s := range []string{m.opts.Host, m.opts.Mode, who} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	// To the minute: a clock to the second would redraw this line every
	// second for nothing.
	left := strings.Join(parts, st.Faint.Render(" · "))
	return widget.Fit(left, m.width-len(clock)-1) + " " + clock
}

// tabsView is the tab line: each tab's title, the active one marked (in
// words too, for NO_COLOR), and the filters in force on the right.
func (m *Model) tabsView() string {
	titles := make([]string, len(m.tabs))
	for i, t := range m.tabs {
		titles[i] = t.Title()
	}
	from := fmt.Sprint(titles, m.active, m.mineOnly, m.filter, m.mode == filtering, m.sortBy[m.active], m.width)
	return m.memos.tabs.Draw(from, func() string { return m.drawTabs(titles) })
}

func (m *Model) drawTabs(titles []string) string {
	st := &m.sh.Styles
	names := make([]string, len(titles))
	for i, t := range titles {
		if i == m.active {
			names[i] = st.ActiveTab.Render("▸ " + t)
		} else {
			names[i] = st.Tab.Render("  " + t)
		}
	}
	left := strings.Join(names, " ")
	var flags []string
	if m.mineOnly {
		flags = append(flags, "mine only")
	}
	if m.filter != "" && m.mode != filtering {
		flags = append(flags, fmt.Sprintf("filter %q", m.filter))
	}
	if len(m.current().SortKeys()) > 0 {
		flags = append(flags, "sort: "+m.sortBy[m.active].String())
	}
	right := st.Faint.Render(strings.Join(flags, " · "))
	gap := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if gap < 2 {
		return widget.Cut(left+"  "+right, m.width)
	}
	return left + strings.Repeat(" ", gap) + right
}

// statusLines are the status line: a prompt, or the status wrapped onto
// at most n lines.
func (m *Model) statusLines(n int) []string {
	st := &m.sh.Styles
	switch {
	case m.mode.prompting() && m.prompt.Confirm:
		return renderAll(st.Prompt, widget.Wrap(m.prompt.Question, m.width, n)) // a question is read whole
	case m.mode.prompting():
		return []string{widget.Cut(m.prompt.View(), m.width)}
	case m.status.text == "":
		return []string{""}
	case m.status.isErr:
		return renderAll(st.StatusErr, widget.Wrap("✗ "+human.Printable(m.status.text), m.width, n))
	default:
		return renderAll(st.StatusOK, widget.Wrap(human.Printable(m.status.text), m.width, n))
	}
}

// footer is the short help, on one line. When it does not fit, keys give
// way from the end with "…" — but while browsing "? help" and "q quit"
// always show: they come last and are kept.
func (m *Model) footer() string {
	bindings := m.ShortHelp()
	var from strings.Builder
	for _, b := range bindings {
		if b.Enabled() {
			from.WriteString(b.Help().Key + "\x00" + b.Help().Desc + "\x00")
		}
	}
	fmt.Fprint(&from, m.width, m.mode)
	return m.memos.footer.Draw(from.String(), func() string { return m.drawFooter(bindings) })
}

func (m *Model) drawFooter(bindings []key.Binding) string {
	var kept []key.Binding
	if m.mode == browsing || m.mode == viewingHistory {
		kept = []key.Binding{m.keys.Help, m.keys.Quit}
		bindings = bindings[:len(bindings)-len(kept)]
	}
	st := &m.sh.Styles
	item := func(b key.Binding) string {
		return st.Label.Render(b.Help().Key) + " " + st.Faint.Render(b.Help().Desc)
	}
	sep := st.Faint.Render(" • ")
	var tail []string
	for _, b := range kept {
		tail = append(tail, item(b))
	}
	tailText := strings.Join(tail, sep)
	room := m.width
	if tailText != "" {
		room -= ansi.StringWidth(tailText) + ansi.StringWidth(sep)
	}
	var head []string
	used, sepW := 0, ansi.StringWidth(sep)
	for i, b := range bindings {
		if !b.Enabled() {
			continue
		}
		s := item(b)
		w := ansi.StringWidth(s)
		if len(head) > 0 {
			w += sepW
		}
		// It must fit, and leave room for " • …" while keys remain.
		more := slices.ContainsFunc(bindings[i+1:], key.Binding.Enabled)
		if used+w > room || more && used+w+sepW+1 > room {
			head = append(head, "…")
			break
		}
		head, used = append(head, s), used+w
	}
	line := strings.Join(head, sep)
	if line != "" && tailText != "" {
		line += sep
	}
	return widget.Cut(line+tailText, m.width)
}

// cutAll cuts every line to width cells.
func cutAll(lines []string, width int) []string {
	for i := range lines {
		lines[i] = widget.Cut(lines[i], width)
	}
	return lines
}
