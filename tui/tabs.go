package tui

import (
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"
)

// tab is one view that fills the lower half of the screen. The root hands
// every tab each new reading and the person's filters (setRows), its size
// (setSize), and the keys it does not take itself (update); it shows the
// active tab's title, view and help.
//
// To add one: a struct holding a table of its own rows (see bookingsTab),
// a pure function that shapes those rows from the readings and the filter,
// and these methods; then append it to Model.tabs in New.
type tab interface {
	help.KeyMap
	// title names the tab on the tab line, with a count: "Bookings (12)".
	title() string
	setSize(width, height int)
	setRows(r *readings, f rowFilter, now time.Time)
	// update takes a key meant for the tab; it reports whether it used it.
	update(msg tea.KeyMsg) bool
	// enable turns the tab's keys on or off: off while a form or prompt
	// has the keyboard.
	enable(on bool)
	// device is the GPU of the selected row, whose history enter opens.
	device() (int, bool)
	// sorts reports whether the person may order the tab (s); the Queue's
	// order is the line's own.
	sorts() bool
	view(now time.Time) []string
}

// rowFilter is how the person chose to look at the rows: it shapes what
// the tabs show, never the readings.
type rowFilter struct {
	text     string // as typed; matched ignoring case
	mineOnly bool
	sortBy   sortKey
}

// keeps reports whether a row passes: the person's own (mine) when only
// theirs are wanted, and showing the filter's text in one of texts.
func (f rowFilter) keeps(mine bool, texts ...string) bool {
	return (mine || !f.mineOnly) && f.match(texts...)
}

// match reports whether any of the texts contains the filter's text.
func (f rowFilter) match(texts ...string) bool {
	want := strings.ToLower(strings.TrimSpace(f.text))
	if want == "" {
		return true
	}
	for _, t := range texts {
		if strings.Contains(strings.ToLower(t), want) {
			return true
		}
	}
	return false
}

// sortKey orders the tables; s cycles through them.
type sortKey int

const (
	byTimeLeft sortKey = iota
	byOwner
	byDevice
	byID
	sortKeys
)

func (s sortKey) String() string {
	return [...]string{"time left", "owner", "device", "id"}[s]
}
