// Package tabs is the tables of the app's lower half: the bookings with
// their countdowns, the GPU processes and what each counts against, and
// the waiting line. Each is a table of its own rows, shaped by a pure
// function from the readings (what the app last read from the ledger and
// the GPUs) and the person's filter and sort order; the app hands every
// tab the readings, its size and its keys.
package tabs

import (
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// Filter is how the person chose to look at the rows: it shapes what
// the tabs show, never the readings.
type Filter struct {
	Text     string // as typed; matched ignoring case
	MineOnly bool
	SortBy   Order
}

// keeps reports whether a row passes: the person's own (mine) when only
// theirs are wanted, and showing the filter's text in one of texts.
func (f Filter) keeps(mine bool, texts ...string) bool {
	return (mine || !f.MineOnly) && f.match(texts...)
}

// match reports whether any of the texts contains the filter's text.
func (f Filter) match(texts ...string) bool {
	want := strings.ToLower(strings.TrimSpace(f.Text))
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

// SortKey is what a table is ordered by; s and , go through a tab's.
type SortKey int

const (
	ByTimeLeft SortKey = iota
	ByOwner
	ByDevice
	ByID
	ByMemory
	BySM
	ByBooking
)

func (s SortKey) String() string {
	return [...]string{"time left", "owner", "device", "id", "memory", "SM", "booking"}[s]
}

// descends says which keys are read biggest first, as htop and nvitop
// order memory and load: the GPU's heaviest users on top.
func (s SortKey) descends() bool { return s == ByMemory || s == BySM }

// Order is a tab's order: its key, and whether I turned it round.
type Order struct {
	By   SortKey
	Desc bool
}

// OrderBy is by in its own direction.
func OrderBy(by SortKey) Order { return Order{By: by, Desc: by.descends()} }

func (o Order) String() string { return o.By.String() + " " + o.arrow() }

// arrow marks the sorted column: ▲ smallest first, ▼ biggest first.
func (o Order) arrow() string {
	if o.Desc {
		return "▼"
	}
	return "▲"
}

// apply turns a comparison of the key round when the order descends.
func (o Order) apply(c int) int {
	if o.Desc {
		return -c
	}
	return c
}

// Step moves to the next of keys (back: the previous), in its own
// direction; an order not among keys starts at the first.
func (o Order) Step(keys []SortKey, back bool) Order {
	i := slices.Index(keys, o.By)
	switch {
	case len(keys) == 0:
		return o
	case i < 0:
		return OrderBy(keys[0])
	case back:
		return OrderBy(keys[(i+len(keys)-1)%len(keys)])
	}
	return OrderBy(keys[(i+1)%len(keys)])
}

// markSorted puts the order's arrow on the title of column i (-1: none),
// widening a column too narrow for it: the flexible one gives the cell.
func markSorted(specs []widget.Column, i int, o Order) []widget.Column {
	if i < 0 {
		return specs
	}
	specs = slices.Clone(specs)
	specs[i].Title += o.arrow()
	if w := ansi.StringWidth(specs[i].Title); !specs[i].Flex && specs[i].Width > 0 && specs[i].Width < w {
		specs[i].Width = w
	}
	return specs
}

// Readings is what the app last read from the ledger and the GPUs, and the
// attribution that follows from the two.
type Readings struct {
	Sample gpu.Sample
	Parts  []core.Partition
	Avail  []core.Availability
	Policy domain.Policy
	Attrs  []admission.Attribution
	// The other hosts of a ledger many hosts share, and warnings about
	// their clocks.
	Hosts    []core.HostView
	Warnings []string
	// The waiting line, read only while the Queue tab is shown (queueRead).
	Queue     []admission.QueueEntry
	QueueRead bool
}
