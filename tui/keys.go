package tui

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/tui/form"
	"github.com/chronos-gpu/chronos/tui/history"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// appKeys are the root's keys: what to do with the bookings, how to look
// at the tables, and the ways out. The tables, the form and the prompt
// have keys of their own. A binding that does not apply now is disabled
// (SetEnabled): it then neither acts nor shows in the help.
type appKeys struct {
	Dismiss, History       key.Binding
	New, Release, Extend   key.Binding
	CancelRequest          key.Binding
	Switch, Back           key.Binding
	Filter, Mine           key.Binding
	Sort, SortBack, Invert key.Binding
	Close, Help, Quit      key.Binding
}

func defaultAppKeys() appKeys {
	return appKeys{
		Dismiss: key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "dismiss notice")),
		History: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "GPU history")),
		New:     key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "new booking")),
		Release: key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "release")),
		Extend:  key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "extend")),
		// x in the Queue tab: the same key as release, on a request.
		CancelRequest: key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "cancel request")),
		Switch:        key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next table")),
		Back:          key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous table")),
		Filter:        key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Mine:          key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "mine/everyone")),
		// s (and htop's F6, nvitop's .) the next column, , the previous
		// one, I (htop's) the other way round.
		Sort:     key.NewBinding(key.WithKeys("s", ".", "f6"), key.WithHelp("s ,", "sort next, back")),
		SortBack: key.NewBinding(key.WithKeys(","), key.WithHelp(",", "sort back")),
		Invert:   key.NewBinding(key.WithKeys("I"), key.WithHelp("I", "invert sort")),
		Close:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close help")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
}

// syncKeys enables the keys that apply now: the root's while browsing (x
// and e only on a live booking, enter once there is a GPU to show), the
// active tab's while nothing else has the keyboard, the history's while it
// is open.
func (m *Model) syncKeys() {
	k := &m.keys
	browse, history := m.mode == browsing, m.mode == viewingHistory
	for _, b := range []*key.Binding{&k.New, &k.Switch, &k.Back, &k.Filter, &k.Mine} {
		b.SetEnabled(browse)
	}
	sorts := browse && len(m.current().SortKeys()) > 0
	k.Sort.SetEnabled(sorts)
	k.SortBack.SetEnabled(sorts)
	k.Invert.SetEnabled(sorts)
	k.Help.SetEnabled(browse || history)
	k.Quit.SetEnabled(browse || history)
	k.Dismiss.SetEnabled((browse || history) && len(m.notices) > 0)
	dev, ok := m.historyDevice()
	k.History.SetEnabled(browse && ok)
	k.History.SetHelp("enter", fmt.Sprintf("GPU %d history", dev))
	if m.history != nil {
		m.history.Enable(history, len(m.data.Sample.Devices), m.fullHelp)
	}
	r, ok := m.bookings.Selected()
	onBooking := browse && m.current() == m.bookings && ok && !r.EndedAt(m.sh.Now()) // upcoming ones too
	k.Release.SetEnabled(onBooking)
	k.Extend.SetEnabled(onBooking)
	_, ok = m.queue.Selected()
	k.CancelRequest.SetEnabled(browse && m.current() == m.queue && ok)
	k.Close.SetEnabled(browse && (m.fullHelp || m.filter != "") || history && m.fullHelp)
	if m.fullHelp {
		k.Close.SetHelp("esc", "close help")
	} else {
		k.Close.SetHelp("esc", "clear filter")
	}
	for i, t := range m.tabs {
		t.Enable(browse && i == m.active)
	}
}

// key routes a key to what has the keyboard: in a terminal too small to
// draw in nothing does, and only quitting works; otherwise the form or the
// prompt when open, else the root and then the tab on screen.
func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	switch {
	case msg.Type != tea.KeyCtrlC:
	case m.tooSmall(), m.mode == quitting: // twice means it
		return m.quit()
	case m.mode != booking: // in the form it cancels the form, as esc does
		return m.askQuit()
	}
	if m.tooSmall() {
		quit := m.keys.Quit
		quit.SetEnabled(true)
		if key.Matches(msg, quit) {
			return m.quit()
		}
		return nil
	}
	switch {
	case m.mode == booking:
		return m.formKey(msg)
	case m.mode.prompting():
		return m.promptKey(msg)
	}

	k := &m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return m.askQuit()
	case key.Matches(msg, k.Help):
		m.fullHelp = !m.fullHelp
	case key.Matches(msg, k.Dismiss):
		return m.dismiss()
	case m.mode == viewingHistory:
		return m.historyKey(msg)
	case key.Matches(msg, k.History):
		dev, _ := m.historyDevice()
		return m.openHistory(dev)
	case key.Matches(msg, k.Close):
		if m.fullHelp {
			m.fullHelp = false
		} else {
			m.setFilter("")
		}
	case key.Matches(msg, k.Switch):
		return m.switchTab(1)
	case key.Matches(msg, k.Back):
		return m.switchTab(len(m.tabs) - 1)
	case key.Matches(msg, k.Mine):
		m.mineOnly = !m.mineOnly
		m.derive()
	case key.Matches(msg, k.Sort), key.Matches(msg, k.SortBack):
		m.sortBy[m.active] = m.sortBy[m.active].Step(m.current().SortKeys(), key.Matches(msg, k.SortBack))
		m.derive()
	case key.Matches(msg, k.Invert):
		m.sortBy[m.active].Desc = !m.sortBy[m.active].Desc
		m.derive()
	case key.Matches(msg, k.Filter):
		m.mode = filtering
		m.prompt.AskText("/", "e.g. bob, python or #12", m.filter, "keep filter", "clear filter", 30)
	case key.Matches(msg, k.New):
		if len(m.data.Avail) == 0 {
			return m.status.set(m.sh, "no GPUs known yet; wait for the first reading", true)
		}
		m.form = form.New(m.sh, m.data.Avail)
		m.mode, m.fullHelp = booking, false
	case key.Matches(msg, k.Release), key.Matches(msg, k.Extend):
		return m.actOnBooking(key.Matches(msg, k.Release))
	case key.Matches(msg, k.CancelRequest):
		return m.actOnRequest()
	default:
		m.current().Update(msg)
	}
	return nil
}

// askQuit quits — but first asks when requests this app waits for are in
// the line: it is their waiter, and they leave the line with it.
func (m *Model) askQuit() tea.Cmd {
	if len(m.placed) == 0 {
		return m.quit()
	}
	verb := " is"
	if len(m.placed) > 1 {
		verb = " are"
	}
	m.resume, m.mode, m.fullHelp = m.mode, quitting, false
	m.prompt.Ask(m.placedNames() + verb + " waiting in line: quit and leave the line? [y] leave · [b] keep waiting in the background · [n] stay")
	m.prompt.Keys.Confirm.SetHelp("y", "quit and leave the line")
	m.prompt.Offer("b", "quit, keep waiting in the background")
	m.prompt.Keys.Cancel.SetHelp("any other key", "stay")
	return nil
}

// placedNames names the requests this app waits for: "Request #3",
// "Requests #3, #5".
func (m *Model) placedNames() string {
	ids := slices.Sorted(maps.Keys(m.placed))
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = fmt.Sprintf("#%d", id)
	}
	if len(ids) == 1 {
		return "Request " + names[0]
	}
	return "Requests " + strings.Join(names, ", ")
}

// switchTab shows the tab step places on, reading the line when it is the
// Queue's.
func (m *Model) switchTab(step int) tea.Cmd {
	left := m.current() == m.queue
	m.active = (m.active + step) % len(m.tabs)
	switch {
	case m.current() == m.queue:
		return m.load() // the line is read only while shown
	case left: // and not kept when not: it would only grow stale
		m.data.Queue, m.data.QueueRead = nil, false
		m.derive()
	}
	return nil
}

// actOnBooking opens the prompt that releases or extends the selected
// booking — unless it is someone else's, which is said at once.
func (m *Model) actOnBooking(release bool) tea.Cmd {
	r, _ := m.bookings.Selected()
	verb := "extend"
	if release {
		verb = "release"
	}
	if !m.sh.Me.MayChange(r.UID) {
		err := fmt.Errorf("%w: #%d is %s's; only they or root may %s it", domain.ErrNotOwner, r.ID, human.Printable(r.User), verb)
		return m.status.set(m.sh, err.Error(), true)
	}
	m.target = r
	if release {
		m.mode = releasing
		m.prompt.Ask(fmt.Sprintf("Release #%d (%s, %s of GPU %s)? y releases, any other key keeps it ",
			r.ID, human.Printable(r.User), human.FormatPercent(r.SharePPM), human.Printable(r.GPUName())))
		return nil
	}
	m.mode = extending
	m.prompt.AskText(fmt.Sprintf("Extend #%d by ", r.ID), "e.g. 30m", "1h", "extend", "cancel", 12)
	return nil
}

// actOnRequest asks before taking the selected request out of the line —
// unless it is someone else's, which is said at once.
func (m *Model) actOnRequest() tea.Cmd {
	r, _ := m.queue.Selected()
	if !m.sh.Me.MayChange(r.UID) {
		err := fmt.Errorf("%w: request #%d is %s's; only they or root may cancel it", domain.ErrNotOwner, r.ID, human.Printable(r.User))
		return m.status.set(m.sh, err.Error(), true)
	}
	m.request, m.mode = r, cancelling
	// A short question that fits the status line; the owner is named only
	// when it is someone else's (root cancelling). The help says that any
	// key other than y keeps it.
	req := r.Request
	if r.Mine {
		req.User = ""
	}
	m.prompt.Ask(fmt.Sprintf("Cancel request #%d (%s)? y/n", r.ID, human.Printable(admission.DescribeRequest(req))))
	return nil
}

// historyDevice is the GPU enter opens the history of: the selected row's,
// else the first GPU read.
func (m *Model) historyDevice() (int, bool) {
	if dev, ok := m.current().Device(); ok {
		return dev, true
	}
	if len(m.data.Sample.Devices) > 0 {
		return m.data.Sample.Devices[0].Index, true
	}
	return 0, false
}

// openHistory shows a GPU's history and reads it from the ledger.
func (m *Model) openHistory(dev int) tea.Cmd {
	name := ""
	for _, d := range m.data.Sample.Devices {
		if d.Index == dev {
			name = d.Name
		}
	}
	m.history = history.New(m.sh, dev, name)
	m.history.ReadAt = m.sh.Now()
	m.mode, m.fullHelp = viewingHistory, false
	return historyCmd(m.opts.Client, dev)
}

// historyKey takes a key while the history is open: esc goes back (or
// closes the help first), ←/→ show the GPU before or after.
func (m *Model) historyKey(msg tea.KeyMsg) tea.Cmd {
	h := m.history
	switch {
	case key.Matches(msg, m.keys.Close):
		m.fullHelp = false
	case key.Matches(msg, h.Keys.Back):
		m.mode, m.history = browsing, nil
		if m.current() == m.queue {
			// Reads while the history was open left the line out.
			return m.load()
		}
	case key.Matches(msg, h.Keys.Prev), key.Matches(msg, h.Keys.Next):
		devs := m.data.Sample.Devices
		i := slices.IndexFunc(devs, func(d gpu.DeviceSample) bool { return d.Index == h.Device })
		step := 1
		if key.Matches(msg, h.Keys.Prev) {
			step = len(devs) - 1
		}
		return m.openHistory(devs[(i+step)%len(devs)].Index)
	default:
		h.Scroll(msg)
	}
	return nil
}

func (m *Model) formKey(msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, m.form.Keys.Cancel) {
		m.mode, m.form = browsing, nil
		return nil
	}
	if m.form.Busy {
		return nil
	}
	switch req, wait := m.form.Update(msg); {
	case req == nil:
		return nil
	case wait:
		return enqueueCmd(m.writes(), *req)
	default:
		return createCmd(m.writes(), *req)
	}
}

func (m *Model) promptKey(msg tea.KeyMsg) tea.Cmd {
	a := m.prompt.Update(msg)
	switch m.mode {
	case releasing:
		m.mode = browsing
		if a == widget.Submitted {
			return releaseCmd(m.writes(), m.target.ID)
		}
		return m.status.set(m.sh, fmt.Sprintf("#%d not released", m.target.ID), false)
	case quitting:
		m.mode = m.resume
		switch a {
		case widget.Submitted:
			m.stop()
			return leaveLineCmd(m.writes(), slices.Sorted(maps.Keys(m.placed)))
		case widget.Other:
			return backgroundCmd(m.opts.Client, m.writes(), m.opts.Self, m.opts.SelfArgs, slices.Sorted(maps.Keys(m.placed)), m.sh.Now())
		}
		wait := " still waits"
		if len(m.placed) > 1 {
			wait = " still wait"
		}
		return m.status.set(m.sh, m.placedNames()+wait, false)
	case cancelling:
		m.mode = browsing
		if a == widget.Submitted {
			return cancelRequestCmd(m.writes(), m.request.ID)
		}
		return m.status.set(m.sh, fmt.Sprintf("Request #%d still waits", m.request.ID), false)
	case extending:
		switch a {
		case widget.Cancelled:
			m.mode = browsing
		case widget.Submitted:
			d, err := human.ParseDuration(m.prompt.Value())
			if err != nil {
				m.prompt.Fail(err)
				return nil
			}
			m.mode = browsing
			return extendCmd(m.writes(), m.target.ID, d)
		}
	case filtering:
		switch a {
		case widget.Cancelled:
			m.mode = browsing
			m.setFilter("")
		case widget.Submitted:
			m.mode = browsing
		default:
			m.setFilter(m.prompt.Value())
		}
	}
	return nil
}

func (m *Model) setFilter(text string) {
	if text != m.filter {
		m.filter = text
		m.derive()
	}
}

// ShortHelp is the footer: the keys of what has the keyboard. While
// browsing, help and quit come last and are kept when the line is short
// (see footer).
func (m *Model) ShortHelp() []key.Binding {
	k := m.keys
	switch {
	case m.mode == booking:
		return m.form.ShortHelp()
	case m.mode.prompting():
		return m.prompt.ShortHelp()
	case m.mode == viewingHistory:
		return append([]key.Binding{k.Dismiss, k.Close}, append(m.history.ShortHelp(), k.Help, k.Quit)...)
	}
	return append([]key.Binding{k.Dismiss}, append(m.current().ShortHelp(),
		k.New, k.Release, k.Extend, k.CancelRequest, k.Switch, k.History, k.Filter, k.Mine, k.Sort, k.Close, k.Help, k.Quit)...)
}

// FullHelp is the help shown with ?: the tab's keys, then the root's.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.keys
	if m.mode == viewingHistory {
		return append(m.history.FullHelp(), []key.Binding{k.Dismiss, k.Close, k.Help, k.Quit})
	}
	return append(m.current().FullHelp(),
		[]key.Binding{k.New, k.Release, k.Extend, k.CancelRequest, k.Switch, k.Back, k.History},
		[]key.Binding{k.Filter, k.Mine, k.Sort, k.Invert, k.Dismiss, k.Close, k.Help, k.Quit})
}
