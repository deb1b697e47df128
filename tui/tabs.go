package tui

import (
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/chronos-gpu/chronos/tui/tabs"
)

// tab is one view that fills the lower half of the screen. The root hands
// every tab each new reading and the person's filters (SetRows), its size
// (SetSize), and the keys it does not take itself (Update); it shows the
// active tab's title, view and help.
//
// To add one: a struct holding a table of its own rows (see tabs.Bookings),
// a pure function that shapes those rows from the readings and the filter,
// and these methods; then append it to Model.tabs in New.
type tab interface {
	help.KeyMap
	// Title names the tab on the tab line, with a count: "Bookings (12)".
	Title() string
	SetSize(width, height int)
	SetRows(r *tabs.Readings, f tabs.Filter, now time.Time)
	// Update takes a key meant for the tab; it reports whether it used it.
	Update(msg tea.KeyMsg) bool
	// Enable turns the tab's keys on or off: off while a form or prompt
	// has the keyboard.
	Enable(on bool)
	// Device is the GPU of the selected row, whose history enter opens.
	Device() (int, bool)
	// SortKeys are what the person may order the tab by (s and , go
	// through them, the first is the default); none for the Queue, whose
	// order is the line's own.
	SortKeys() []tabs.SortKey
	View(now time.Time) []string
}
