package tui

import "github.com/charmbracelet/bubbles/key"

// KeyMap is every key the app answers to. Bindings that do not apply in the
// current state are disabled (SetEnabled), which both stops them matching
// and hides them from the help.
type KeyMap struct {
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding

	New     key.Binding
	Release key.Binding
	Extend  key.Binding
	Switch  key.Binding
	Filter  key.Binding
	Mine    key.Binding
	Sort    key.Binding
	Help    key.Binding
	Quit    key.Binding

	// In forms and prompts.
	Submit    key.Binding
	Cancel    key.Binding
	Confirm   key.Binding
	NextField key.Binding
	PrevField key.Binding
	Left      key.Binding
	Right     key.Binding
}

// DefaultKeyMap has vim keys and arrows both.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "top")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "bottom")),

		New:     key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "new booking")),
		Release: key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "release")),
		Extend:  key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "extend")),
		Switch:  key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "bookings/processes")),
		Filter:  key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Mine:    key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "mine/everyone")),
		Sort:    key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort")),
		Help:    key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:    key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),

		Submit:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "ok")),
		Cancel:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		Confirm:   key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes")),
		NextField: key.NewBinding(key.WithKeys("tab", "down"), key.WithHelp("tab/↓", "next field")),
		PrevField: key.NewBinding(key.WithKeys("shift+tab", "up"), key.WithHelp("shift+tab/↑", "previous field")),
		Left:      key.NewBinding(key.WithKeys("left"), key.WithHelp("←/→", "choose")),
		Right:     key.NewBinding(key.WithKeys("right")),
	}
}

// mode is what the keyboard is talking to.
type mode int

const (
	browsing  mode = iota
	booking        // the new-booking form
	releasing      // waiting for y to confirm a release
	extending      // typing an extension
	filtering      // typing a filter
)

// setMode enables the bindings that apply in m (and, while browsing, to the
// selected row) and disables the rest.
func (k *KeyMap) setMode(m mode, view tab, selectedLive bool) {
	browse := m == browsing
	for _, b := range []*key.Binding{&k.Up, &k.Down, &k.PageUp, &k.PageDown, &k.Top, &k.Bottom,
		&k.New, &k.Switch, &k.Filter, &k.Mine, &k.Sort, &k.Help, &k.Quit} {
		b.SetEnabled(browse)
	}
	k.Release.SetEnabled(browse && view == bookingsTab && selectedLive)
	k.Extend.SetEnabled(browse && view == bookingsTab && selectedLive)

	form := m == booking
	k.NextField.SetEnabled(form)
	k.PrevField.SetEnabled(form)
	k.Left.SetEnabled(form)
	k.Right.SetEnabled(form)
	k.Submit.SetEnabled(m == booking || m == extending || m == filtering)
	k.Cancel.SetEnabled(m != browsing)
	k.Confirm.SetEnabled(m == releasing)
	if m == filtering {
		k.Submit.SetHelp("enter", "keep filter")
		k.Cancel.SetHelp("esc", "clear filter")
	} else {
		k.Submit.SetHelp("enter", map[mode]string{booking: "book", extending: "extend"}[m])
		k.Cancel.SetHelp("esc", "cancel")
	}
}

// ShortHelp is the footer's one line.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Confirm, k.Submit, k.NextField, k.Left, k.Cancel,
		k.New, k.Release, k.Extend, k.Switch, k.Filter, k.Mine, k.Sort, k.Help, k.Quit}
}

// FullHelp is the help shown with ?.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.New, k.Release, k.Extend, k.Switch},
		{k.Filter, k.Mine, k.Sort, k.Help, k.Quit},
		{k.Confirm, k.Submit, k.NextField, k.PrevField, k.Left, k.Cancel},
	}
}
