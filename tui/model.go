// Package tui is Chronos's terminal app — every GPU's live load, every
// booking with its countdown, the GPU processes and whom they count against,
// and keys to book, release and extend — and the plain renderers the CLI
// prints with.
package tui

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// Options configure the app.
type Options struct {
	Client  *core.Client
	Backend gpu.Backend
	// Notice is shown under the header, e.g. "no NVIDIA driver found;
	// showing simulated GPUs".
	Notice string
	// Mode is how the GPUs are shared: "concurrent (MPS, multi-user)" or
	// "time-sliced".
	Mode string
	Host string
	// Acts carries one line per monitor act (expired, warned, signalled),
	// shown in the status line. May be nil.
	Acts <-chan string
	// Now is the clock; nil means the client's.
	Now func() time.Time
	// Refresh is how often the screen ticks (countdowns are to the second);
	// zero means a second. The GPUs are sampled every gpuEvery ticks; the
	// ledger is re-read when it changes (see reloadEvery).
	Refresh time.Duration
}

// The smallest terminal the app draws in.
const (
	minWidth  = 60
	minHeight = 16
)

// Work a tick does only now and then, not every second. The GPU panel is
// the widest part of the screen and changes with every reading, so reading
// every other tick halves what it writes to the terminal. The ledger is
// re-read on the watch's change notices, after the app's own writes and when
// a booking's deadline passes; reloadEvery re-reads it anyway in case a
// notice was missed.
const (
	gpuEvery    = 2
	reloadEvery = 10
)

// frameRate caps how often the screen is redrawn.
const frameRate = 30

// How long a status message stays.
const (
	statusFor      = 5 * time.Second
	errorStatusFor = 10 * time.Second
)

// common is what every part of the screen shares, by pointer.
type common struct {
	styles Styles
	keys   KeyMap
	now    func() time.Time
	me     core.Identity
}

// Model is the root of the app: it owns the data read from the ledger and
// the GPUs, composes the header, GPU panel, tables, form and footer, and
// routes keys by mode.
type Model struct {
	opts   Options
	c      *common
	ctx    context.Context
	stop   context.CancelFunc
	width  int
	height int

	sample  gpu.Sample
	parts   []core.Partition
	avail   []core.Availability
	policy  core.Policy
	attrs   []core.Attribution
	segs    map[int][]segment
	changes <-chan struct{}
	// The other hosts of a ledger many hosts share, their GPUs' bookings,
	// and warnings about their clocks.
	hosts    []core.HostView
	hostSegs map[string]map[int][]segment
	warnings []string

	sampledAt  time.Time // when the GPUs were last asked for a reading
	loadedAt   time.Time // when the ledger was last asked for
	nextChange time.Time // the next instant a shown booking ends or leaves the table
	// changeHeld: a read for a change notice went out less than
	// changeSpacing ago; changeAgain: another notice came meanwhile.
	changeHeld, changeAgain bool

	gpus     gpuPanel
	bookings bookingsTable
	procs    processesTable
	form     bookingForm
	help     help.Model
	filter   textinput.Model
	prompt   textinput.Model // the extension typed after e

	view      tab
	mode      mode
	mineOnly  bool
	sortBy    sortKey
	fullHelp  bool
	target    bookingRow // what x or e acts on
	promptErr string

	status    string
	statusErr bool
	statusSeq int
}

// New returns the app's root model.
func New(opts Options) Model {
	if opts.Refresh <= 0 {
		opts.Refresh = time.Second
	}
	if opts.Now == nil {
		opts.Now = opts.Client.Now
	}
	c := &common{styles: DefaultStyles(), keys: DefaultKeyMap(), now: opts.Now, me: opts.Client.Me()}
	ctx, stop := context.WithCancel(context.Background())
	m := Model{
		opts: opts, c: c, ctx: ctx, stop: stop,
		width: 80, height: 24,
		policy:   core.DefaultPolicy(),
		gpus:     newGPUPanel(c),
		bookings: bookingsTable{c: c},
		procs:    processesTable{c: c},
		help:     help.New(),
		filter:   newInput(c, "owner, command or id", "", 30),
		prompt:   newInput(c, "1h", "1h", 12),
	}
	m.help.Styles.ShortKey = c.styles.Label
	m.help.Styles.FullKey = c.styles.Label
	m.help.Styles.ShortDesc = c.styles.Faint
	m.help.Styles.FullDesc = c.styles.Faint
	m.syncKeys()
	return m
}

// Run shows the app on the terminal until the person quits.
func Run(opts Options) error {
	m := New(opts)
	defer m.stop()
	// 30 frames a second is still quicker than typing, and half the
	// renderer's wake-ups of the default 60 while the app sits idle.
	_, err := tea.NewProgram(m, tea.WithAltScreen(), tea.WithFPS(frameRate)).Run()
	return err
}

// Init reads the GPUs and the ledger, starts the refresh tick and the
// ledger watch, and listens for the monitor.
func (m Model) Init() tea.Cmd {
	return tea.Batch(
		sampleCmd(m.opts.Backend),
		loadCmd(m.opts.Client),
		tickCmd(m.opts.Refresh),
		watchCmd(m.ctx, m.opts.Client.Ledger(), m.opts.Refresh),
		waitActCmd(m.opts.Acts),
	)
}

// Update routes one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := m.update(msg)
	m.syncKeys()
	return m, cmd
}

func (m Model) update(msg tea.Msg) (Model, tea.Cmd) {
	client := m.opts.Client
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.Width = msg.Width
		m.clampCursors()
		return m, nil

	case tickMsg:
		// Countdowns come from the clock in View; a tick only decides what
		// needs reading again.
		now := m.c.now()
		cmds := []tea.Cmd{tickCmd(m.opts.Refresh)}
		if m.due(now, m.sampledAt, gpuEvery) {
			m.sampledAt = now
			cmds = append(cmds, sampleCmd(m.opts.Backend), hostsCmd(client))
		}
		if passed(now, m.nextChange) || m.due(now, m.loadedAt, reloadEvery) {
			m = m.loading()
			cmds = append(cmds, loadCmd(client))
		}
		return m, tea.Batch(cmds...)

	case sampleMsg:
		if msg.err != nil {
			return m.setStatus(fmt.Sprintf("reading the GPUs: %v", msg.err), true)
		}
		if m.sampledAt.IsZero() { // Init's reading
			m.sampledAt = m.c.now()
		}
		m.sample = msg.sample
		m.gpus.record(msg.sample)
		m.derive()
		return m, nil

	case hostsMsg:
		if msg.err != nil {
			return m.setStatus(fmt.Sprintf("reading the other hosts: %v", msg.err), true)
		}
		m.hosts, m.warnings = msg.hosts, core.SkewWarnings(msg.hosts)
		return m, nil

	case ledgerMsg:
		if msg.err != nil {
			return m.setStatus(msg.err.Error(), true)
		}
		if m.loadedAt.IsZero() { // Init's reading
			m = m.loading()
		}
		m.parts, m.avail, m.policy = msg.parts, msg.avail, msg.policy
		if m.mode == booking {
			m.form.setDevices(msg.avail)
		}
		m.derive()
		return m, nil

	case watchingMsg:
		m.changes = msg.changes
		return m, waitChangeCmd(m.changes)

	case ledgerChangedMsg:
		// Under a stream of writes (a busy lab, a soak) notices come faster
		// than re-reading helps: read at once, then at most once per
		// changeSpacing while they keep coming.
		if m.changeHeld {
			m.changeAgain = true
			return m, waitChangeCmd(m.changes)
		}
		m.changeHeld = true
		m = m.loading()
		return m, tea.Batch(loadCmd(client), waitChangeCmd(m.changes), spacingCmd())

	case changeSpacingMsg:
		m.changeHeld = false
		if !m.changeAgain {
			return m, nil
		}
		m.changeAgain, m.changeHeld = false, true
		m = m.loading()
		return m, tea.Batch(loadCmd(client), spacingCmd())

	case actMsg:
		m, cmd := m.setStatus(string(msg), false)
		m = m.loading()
		return m, tea.Batch(cmd, waitActCmd(m.opts.Acts), loadCmd(client))

	case createdMsg:
		if msg.err != nil {
			if m.mode == booking {
				m.form.failed(msg.err)
			}
			return m.setStatus(msg.err.Error(), true)
		}
		p := *msg.part
		m.parts = append(slices.DeleteFunc(m.parts, func(q core.Partition) bool { return q.ID == p.ID }), p)
		if m.mode == booking {
			m.mode = browsing
		}
		m.view = bookingsTab
		m.derive()
		m.bookings.selectID(p.ID)
		m.clampCursors()
		m, cmd := m.setStatus(fmt.Sprintf("Booked #%d: %s (%s) of GPU %d for %s", p.ID, core.FormatPercent(p.SharePPM),
			core.FormatBytes(p.Bytes), p.Device, core.FormatDuration(p.Expires.Sub(p.Created))), false)
		m = m.loading()
		return m, tea.Batch(cmd, loadCmd(client))

	case releasedMsg:
		if msg.err != nil {
			return m.setStatus(msg.err.Error(), true)
		}
		m.replace(msg.part)
		m, cmd := m.setStatus(fmt.Sprintf("Released #%d", msg.part.ID), false)
		m = m.loading()
		return m, tea.Batch(cmd, loadCmd(client))

	case extendedMsg:
		if msg.err != nil {
			return m.setStatus(msg.err.Error(), true)
		}
		m.replace(msg.part)
		m, cmd := m.setStatus(fmt.Sprintf("Extended #%d by %s: %s left", msg.part.ID, core.FormatDuration(msg.by),
			Countdown(msg.part.Expires.Sub(m.c.now()))), false)
		m = m.loading()
		return m, tea.Batch(cmd, loadCmd(client))

	case clearStatusMsg:
		if msg.seq == m.statusSeq {
			m.status, m.statusErr = "", false
		}
		return m, nil

	case tea.KeyMsg:
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
			// Keys typed faster than a read arrive together ("n30%"); each
			// is its own key, and the first may change what the rest mean.
			var cmds []tea.Cmd
			for _, r := range msg.Runes {
				var cmd tea.Cmd
				m, cmd = m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt})
				cmds = append(cmds, cmd)
			}
			return m, tea.Batch(cmds...)
		}
		return m.key(msg)
	}
	return m, nil
}

// due reports whether a read last made at last is due again at now, every
// so many ticks. Ticks jitter, so it is due half a tick early rather than a
// whole tick late.
func (m Model) due(now, last time.Time, ticks int) bool {
	every := m.opts.Refresh
	return last.IsZero() || now.Sub(last) >= time.Duration(ticks)*every-every/2
}

// passed reports whether the instant t (zero: none) has come.
func passed(now, t time.Time) bool { return !t.IsZero() && !now.Before(t) }

// loading notes that the ledger is being read now.
func (m Model) loading() Model {
	m.loadedAt = m.c.now()
	return m
}

// replace puts a changed booking in place of its old copy.
func (m *Model) replace(p core.Partition) {
	for i := range m.parts {
		if m.parts[i].ID == p.ID {
			m.parts[i] = p
		}
	}
	m.derive()
}

// setStatus shows a transient message and schedules its clearing.
func (m Model) setStatus(text string, isErr bool) (Model, tea.Cmd) {
	if text == m.status && isErr == m.statusErr {
		return m, nil // the same error every second would never clear
	}
	m.statusSeq++
	m.status, m.statusErr = text, isErr
	after := statusFor
	if isErr {
		after = errorStatusFor
	}
	return m, clearStatusCmd(m.statusSeq, after)
}

func (m Model) quit() (Model, tea.Cmd) {
	m.stop()
	return m, tea.Quit
}

func (m Model) key(msg tea.KeyMsg) (Model, tea.Cmd) {
	k := &m.c.keys
	if msg.Type == tea.KeyCtrlC {
		return m.quit()
	}
	switch m.mode {
	case booking:
		if key.Matches(msg, k.Cancel) {
			m.mode = browsing
			return m, nil
		}
		if m.form.busy {
			return m, nil
		}
		var req *core.Request
		m.form, req = m.form.Update(msg)
		if req != nil {
			return m, createCmd(m.opts.Client, *req)
		}
		return m, nil

	case releasing:
		m.mode = browsing
		if key.Matches(msg, k.Confirm) {
			return m, releaseCmd(m.opts.Client, m.target.ID)
		}
		return m.setStatus(fmt.Sprintf("#%d not released", m.target.ID), false)

	case extending:
		switch {
		case key.Matches(msg, k.Cancel):
			m.mode = browsing
		case key.Matches(msg, k.Submit):
			d, err := core.ParseDuration(m.prompt.Value())
			if err != nil {
				m.promptErr = err.Error()
				return m, nil
			}
			m.mode = browsing
			return m, extendCmd(m.opts.Client, m.target.ID, d)
		default:
			m.prompt, _ = m.prompt.Update(msg)
			m.promptErr = ""
		}
		return m, nil

	case filtering:
		switch {
		case key.Matches(msg, k.Cancel):
			m.filter.SetValue("")
			m.filter.Blur()
			m.mode = browsing
		case key.Matches(msg, k.Submit):
			m.filter.Blur()
			m.mode = browsing
		default:
			m.filter, _ = m.filter.Update(msg)
		}
		m.derive()
		return m, nil
	}

	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.fullHelp = !m.fullHelp
	case key.Matches(msg, k.Cancel):
		if m.fullHelp {
			m.fullHelp = false
		} else if m.filter.Value() != "" {
			m.filter.SetValue("")
			m.derive()
		}
	case key.Matches(msg, k.Switch):
		m.view = 1 - m.view
	case key.Matches(msg, k.Up):
		m.moveCursor(-1)
	case key.Matches(msg, k.Down):
		m.moveCursor(1)
	case key.Matches(msg, k.PageUp):
		m.moveCursor(-max(1, m.tableHeight()-1))
	case key.Matches(msg, k.PageDown):
		m.moveCursor(max(1, m.tableHeight()-1))
	case key.Matches(msg, k.Top):
		m.moveCursor(-1 << 30)
	case key.Matches(msg, k.Bottom):
		m.moveCursor(1 << 30)
	case key.Matches(msg, k.Mine):
		m.mineOnly = !m.mineOnly
		m.derive()
	case key.Matches(msg, k.Sort):
		m.sortBy = (m.sortBy + 1) % sortKeys
		m.derive()
	case key.Matches(msg, k.Filter):
		m.mode = filtering
		m.filter.Focus()
		m.filter.CursorEnd()
	case key.Matches(msg, k.New):
		if len(m.avail) == 0 {
			return m.setStatus("no GPUs known yet; wait for the first reading", true)
		}
		m.form = newBookingForm(m.c, m.avail)
		m.mode = booking
		m.fullHelp = false
	case key.Matches(msg, k.Release):
		if r, ok := m.bookings.selected(); ok {
			m.target, m.mode = r, releasing
		}
	case key.Matches(msg, k.Extend):
		if r, ok := m.bookings.selected(); ok {
			m.target, m.mode, m.promptErr = r, extending, ""
			m.prompt.SetValue("1h")
			m.prompt.Focus()
			m.prompt.CursorEnd()
		}
	}
	return m, nil
}

func (m *Model) moveCursor(delta int) {
	if m.view == bookingsTab {
		m.bookings.cur.at += delta
	} else {
		m.procs.cur.at += delta
	}
	m.clampCursors()
}

func (m *Model) clampCursors() {
	h := m.tableHeight() - 1
	m.bookings.cur.clamp(len(m.bookings.rows), h)
	m.procs.cur.clamp(len(m.procs.rows), h)
}

// syncKeys enables the keys that apply now.
func (m *Model) syncKeys() {
	live := false
	if r, ok := m.bookings.selected(); ok {
		live = r.LiveAt(m.c.now())
	}
	m.c.keys.setMode(m.mode, m.view, live)
	switch {
	case m.mode == releasing:
		m.c.keys.Cancel.SetHelp("any other key", "cancel")
	case m.mode == browsing && m.fullHelp:
		m.c.keys.Cancel.SetEnabled(true)
		m.c.keys.Cancel.SetHelp("esc", "close help")
	case m.mode == browsing && m.filter.Value() != "":
		m.c.keys.Cancel.SetEnabled(true)
		m.c.keys.Cancel.SetHelp("esc", "clear filter")
	}
}

// derive rebuilds what the tables show from the data, the filter, the
// owner toggle and the sort order. It runs when any of them changes, not on
// every frame, so View only draws.
func (m *Model) derive() {
	now := m.c.now()
	client := m.opts.Client
	// This host's GPUs are sampled here; other hosts' bookings are drawn
	// under their own GPUs.
	var raw []storage.Partition
	m.bookings.hosts = false
	for _, p := range m.parts {
		if client.OnThisHost(p.Partition) {
			raw = append(raw, p.Partition)
		}
		m.bookings.hosts = m.bookings.hosts || p.Host != ""
	}
	m.attrs = core.Attribute(m.sample, raw, now)
	procs := map[uint64]int{}
	commands := map[uint64]string{}
	for _, a := range m.attrs {
		if a.Partition != 0 {
			procs[a.Partition]++
			commands[a.Partition] += a.Command + "\n"
		}
	}

	m.segs, m.hostSegs = map[int][]segment{}, map[string]map[int][]segment{}
	for _, p := range m.parts {
		if !p.LiveAt(now) {
			continue
		}
		bySeg := m.segs
		if !client.OnThisHost(p.Partition) {
			if bySeg = m.hostSegs[p.Host]; bySeg == nil {
				bySeg = map[int][]segment{}
				m.hostSegs[p.Host] = bySeg
			}
		}
		segs := bySeg[p.Device]
		if i := slices.IndexFunc(segs, func(s segment) bool { return s.user == p.User }); i >= 0 {
			segs[i].share += p.SharePPM
		} else {
			segs = append(segs, segment{user: p.User, share: p.SharePPM})
		}
		bySeg[p.Device] = segs
	}

	filter := strings.ToLower(strings.TrimSpace(m.filter.Value()))
	me := m.c.me.UID
	var selected uint64
	if r, ok := m.bookings.selected(); ok {
		selected = r.ID
	}
	rows := m.bookings.rows[:0:0]
	// The next deadline after the ledger was read: when it passes the
	// ledger is read again, even if a sample re-derives the rows first.
	m.nextChange = time.Time{}
	soonest := func(t time.Time) {
		if t.After(m.loadedAt) && (m.nextChange.IsZero() || t.Before(m.nextChange)) {
			m.nextChange = t
		}
	}
	for _, p := range m.parts {
		if p.LiveAt(now) {
			soonest(p.Expires)
		} else {
			soonest(endedAt(p.Partition).Add(shownAfterEnd))
		}
		if !p.LiveAt(now) && now.Sub(endedAt(p.Partition)) > shownAfterEnd {
			continue
		}
		r := bookingRow{Partition: p, procs: procs[p.ID], commands: commands[p.ID], mine: p.UID == me, live: p.LiveAt(now)}
		if m.mineOnly && !r.mine {
			continue
		}
		if filter != "" && !matches(filter, r.User, "#"+strconv.FormatUint(r.ID, 10), r.commands) {
			continue
		}
		rows = append(rows, r)
	}
	sortBookings(rows, m.sortBy)
	m.bookings.rows = rows
	if selected != 0 {
		m.bookings.selectID(selected)
	}

	var prows []processRow
	for _, a := range m.attrs {
		r := processRow{Attribution: a, mine: a.UID == me}
		if m.mineOnly && !r.mine {
			continue
		}
		if filter != "" && !matches(filter, a.User, a.Command, strconv.Itoa(a.PID), "#"+strconv.FormatUint(a.Partition, 10)) {
			continue
		}
		prows = append(prows, r)
	}
	sortProcesses(prows, m.sortBy)
	m.procs.rows = prows
	m.clampCursors()
}

// matches reports whether any of the texts contains the (lower-case) filter.
func matches(filter string, texts ...string) bool {
	for _, t := range texts {
		if strings.Contains(strings.ToLower(t), filter) {
			return true
		}
	}
	return false
}

func sortBookings(rows []bookingRow, by sortKey) {
	slices.SortStableFunc(rows, func(a, b bookingRow) int {
		var c int
		switch by {
		case byTimeLeft:
			// Ended bookings sink below the live ones, most recent first.
			ae, be := !a.live, !b.live
			switch {
			case ae != be && ae:
				c = 1
			case ae != be:
				c = -1
			case ae:
				c = endedAt(b.Partition.Partition).Compare(endedAt(a.Partition.Partition))
			default:
				c = a.Expires.Compare(b.Expires)
			}
		case byOwner:
			c = strings.Compare(a.User, b.User)
		case byDevice:
			c = a.Device - b.Device
		}
		if c == 0 {
			c = int(a.ID) - int(b.ID)
		}
		return c
	})
}

func sortProcesses(rows []processRow, by sortKey) {
	slices.SortStableFunc(rows, func(a, b processRow) int {
		var c int
		switch by {
		case byOwner:
			c = strings.Compare(a.User, b.User)
		case byID:
			c = a.PID - b.PID
		case byTimeLeft:
			c = int(a.Partition) - int(b.Partition)
		}
		if c == 0 {
			c = a.Device - b.Device
		}
		if c == 0 {
			c = a.PID - b.PID
		}
		return c
	})
}

// layout splits the height: header, GPU panel, tab line, body (table, form
// or help) and the two footer lines.
type layout struct {
	header, gpus, hosts, body int
	fullGPUs                  bool
}

func (m Model) layout() layout {
	l := layout{header: 1 + len(m.warnings)}
	if m.opts.Notice != "" {
		l.header++
	}
	rest := m.height - l.header - 1 /* tabs */ - 2 /* status, help */
	// The tables are what people act on: the GPU panel shrinks to compact
	// rows before they get less than half the room.
	minBody := max(6, rest/2)
	if m.mode == booking {
		minBody = max(minBody, m.form.height())
	}
	// Other hosts' GPUs take what this host's leave, a line each.
	l.gpus, l.fullGPUs = gpuLayout(len(m.sample.Devices), rest-minBody-min(hostsLines(m.hosts), 2))
	l.hosts = max(0, min(hostsLines(m.hosts), rest-minBody-l.gpus))
	l.body = max(1, rest-l.gpus-l.hosts)
	return l
}

// tableHeight is the lines the table has, its header included.
func (m Model) tableHeight() int { return m.layout().body }

// View draws the screen. It reads only the model; countdowns come from the
// stored deadlines and the clock.
func (m Model) View() string {
	if m.width < minWidth || m.height < minHeight {
		msg := fmt.Sprintf("Terminal too small: %d×%d.\nChronos needs at least %d×%d.\n\nq quits.", m.width, m.height, minWidth, minHeight)
		return frame(msg, m.width, m.height)
	}
	st := &m.c.styles
	now := m.c.now()
	l := m.layout()
	var b strings.Builder
	add := func(lines ...string) {
		for _, line := range lines {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(fit(line, m.width))
		}
	}

	add(m.headerView(now))
	if m.opts.Notice != "" {
		add(st.Notice.Render(Printable(m.opts.Notice)))
	}
	for _, w := range m.warnings {
		add(st.Notice.Render("⚠ " + Printable(w)))
	}
	add(m.gpus.View(m.sample, m.segs, m.width, l.gpus, l.fullGPUs)...)
	add(m.gpus.hostsView(m.hosts, m.hostSegs, m.width, l.hosts)...)
	add(m.tabsView())

	var body []string
	switch {
	case m.mode == booking:
		body = strings.Split(m.form.View(min(m.width, 90)), "\n")
	case m.fullHelp:
		body = append([]string{st.Label.Render("Keys")}, strings.Split(m.help.FullHelpView(m.c.keys.FullHelp()), "\n")...)
	case m.view == bookingsTab:
		body = m.bookings.View(now, m.policy.WarnLead, m.width, l.body)
	default:
		body = m.procs.View(m.width, l.body)
	}
	for i := range l.body {
		if i < len(body) {
			add(body[i])
		} else {
			add("")
		}
	}
	add(m.statusView(), m.help.ShortHelpView(m.c.keys.ShortHelp()))
	return b.String()
}

func (m Model) headerView(now time.Time) string {
	st := &m.c.styles
	backend := ""
	if m.opts.Backend != nil {
		backend = st.NVML.Render(strings.ToUpper(m.opts.Backend.Name())) // NVML or DRM
	}
	if m.opts.Backend == nil || m.opts.Backend.Simulated() || m.sample.Simulated {
		backend = st.Simulated.Render(" SIMULATED GPUs ")
	}
	who := m.c.me.User
	if m.c.me.Root() {
		who += " (root)"
	}
	parts := []string{st.Title.Render("Chronos"), backend}
	for _, s := range []string{m.opts.Host, m.opts.Mode, who} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	// To the minute: the countdowns below already tick every second, and a
	// clock that did too would redraw this line every second for nothing.
	clock := now.Format("15:04")
	left := strings.Join(parts, st.Faint.Render(" · "))
	return fit(left, m.width-len(clock)-1) + " " + clock
}

func (m Model) tabsView() string {
	st := &m.c.styles
	names := []string{fmt.Sprintf("Bookings (%d)", len(m.bookings.rows)), fmt.Sprintf("Processes (%d)", len(m.procs.rows))}
	for i := range names {
		if tab(i) == m.view {
			names[i] = st.ActiveTab.Render(names[i])
		} else {
			names[i] = st.Tab.Render(names[i])
		}
	}
	left := strings.Join(names, "  ")
	var flags []string
	if m.mineOnly {
		flags = append(flags, "mine only")
	}
	if f := m.filter.Value(); f != "" && m.mode != filtering {
		flags = append(flags, fmt.Sprintf("filter %q", f))
	}
	flags = append(flags, "sort: "+m.sortBy.String())
	right := st.Faint.Render(strings.Join(flags, " · "))
	gap := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if gap < 2 {
		return cut(left+"  "+right, m.width)
	}
	return left + strings.Repeat(" ", gap) + right
}

func (m Model) statusView() string {
	st := &m.c.styles
	switch m.mode {
	case releasing:
		t := m.target
		return st.Prompt.Render(fmt.Sprintf("Release #%d (%s, %s of GPU %d)? y releases, any other key keeps it",
			t.ID, Printable(t.User), core.FormatPercent(t.SharePPM), t.Device))
	case extending:
		line := st.Prompt.Render(fmt.Sprintf("Extend #%d by ", m.target.ID)) + m.prompt.View()
		if m.promptErr != "" {
			line += " " + st.Invalid.Render("✗ "+m.promptErr)
		}
		return line
	case filtering:
		return st.Prompt.Render("/") + m.filter.View()
	}
	switch {
	case m.status == "":
		return ""
	case m.statusErr:
		return st.StatusErr.Render("✗ " + Printable(m.status))
	default:
		return st.StatusOK.Render(Printable(m.status))
	}
}
