package tui

import (
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
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
	// sortKeys are what the person may order the tab by (s and , go
	// through them, the first is the default); none for the Queue, whose
	// order is the line's own.
	sortKeys() []sortKey
	view(now time.Time) []string
}

// rowFilter is how the person chose to look at the rows: it shapes what
// the tabs show, never the readings.
type rowFilter struct {
	text     string // as typed; matched ignoring case
	mineOnly bool
	sortBy   sortOrder
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

// sortKey is what a table is ordered by; s and , go through a tab's.
type sortKey int

const (
	byTimeLeft sortKey = iota
	byOwner
	byDevice
	byID
	byMemory
	bySM
	byBooking
)

func (s sortKey) String() string {
	return [...]string{"time left", "owner", "device", "id", "memory", "SM", "booking"}[s]
}

// descends says which keys are read biggest first, as htop and nvitop
// order memory and load: the GPU's heaviest users on top.
func (s sortKey) descends() bool { return s == byMemory || s == bySM }

// sortOrder is a tab's order: its key, and whether I turned it round.
type sortOrder struct {
	by   sortKey
	desc bool
}

// orderBy is by in its own direction.
func orderBy(by sortKey) sortOrder { return sortOrder{by: by, desc: by.descends()} }

func (o sortOrder) String() string { return o.by.String() + " " + o.arrow() }

// arrow marks the sorted column: ▲ smallest first, ▼ biggest first.
func (o sortOrder) arrow() string {
	if o.desc {
		return "▼"
	}
	return "▲"
}

// apply turns a comparison of the key round when the order descends.
func (o sortOrder) apply(c int) int {
	if o.desc {
		return -c
	}
	return c
}

// step moves to the next of keys (back: the previous), in its own
// direction; an order not among keys starts at the first.
func (o sortOrder) step(keys []sortKey, back bool) sortOrder {
	i := slices.Index(keys, o.by)
	switch {
	case len(keys) == 0:
		return o
	case i < 0:
		return orderBy(keys[0])
	case back:
		return orderBy(keys[(i+len(keys)-1)%len(keys)])
	}
	return orderBy(keys[(i+1)%len(keys)])
}

// markSorted puts the order's arrow on the title of column i (-1: none),
// widening a column too narrow for it: the flexible one gives the cell.
func markSorted(specs []column, i int, o sortOrder) []column {
	if i < 0 {
		return specs
	}
	specs = slices.Clone(specs)
	specs[i].title += o.arrow()
	if w := ansi.StringWidth(specs[i].title); !specs[i].flex && specs[i].width > 0 && specs[i].width < w {
		specs[i].width = w
	}
	return specs
}
