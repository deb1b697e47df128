package tabs

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// BookingRow is a booking as the table shows it.
type BookingRow struct {
	core.Partition
	procs int    // GPU processes counting against it
	InUse uint64 // the GPU memory they use
	// command is what they run, as one line: shown where the terminal is
	// wide enough for a COMMAND column.
	command string
	Mine    bool
	Live    bool // when the rows were shaped
}

// ShownAfterEnd is how long an ended booking stays in the table, so that a
// release or an expiry is seen rather than a row silently vanishing.
const ShownAfterEnd = 10 * time.Minute

// bookingRows shapes the bookings table: live bookings and those ended in
// the last shownAfterEnd, each with what its processes use, kept by the
// filter and sorted.
func bookingRows(r *Readings, f Filter, me int, now time.Time) []BookingRow {
	type use struct {
		procs    int
		bytes    uint64
		commands []string
	}
	uses := map[uint64]*use{}
	for _, a := range r.Attrs {
		if a.Partition == 0 {
			continue
		}
		u := uses[a.Partition]
		if u == nil {
			u = &use{}
			uses[a.Partition] = u
		}
		u.procs++
		u.bytes += a.MemoryUsed
		u.commands = append(u.commands, a.Command)
	}
	var rows []BookingRow
	for _, p := range r.Parts {
		ended := p.EndedAt(now) // one booked ahead is not: it can be released or extended
		if ended && now.Sub(p.End()) > ShownAfterEnd {
			continue
		}
		row := BookingRow{Partition: p, Mine: p.UID == me, Live: !ended}
		var commands []string
		if u := uses[p.ID]; u != nil {
			row.procs, row.InUse, commands = u.procs, u.bytes, u.commands
			row.command = strings.Join(u.commands, "; ")
		}
		if f.keeps(row.Mine, append(commands, p.User, "#"+strconv.FormatUint(p.ID, 10))...) {
			rows = append(rows, row)
		}
	}
	sortBookings(rows, f.SortBy)
	return rows
}

// bookingSorts are what the bookings table can be ordered by.
var bookingSorts = []SortKey{ByTimeLeft, ByOwner, ByDevice, ByID, ByMemory}

// bookingSorted is the column each order marks.
var bookingSorted = map[SortKey]int{ByTimeLeft: bkLeft, ByOwner: bkOwner, ByDevice: bkGPU, ByID: bkID, ByMemory: bkInUse}

func sortBookings(rows []BookingRow, o Order) {
	slices.SortStableFunc(rows, func(a, b BookingRow) int {
		var c int
		switch o.By {
		case ByTimeLeft:
			// Ended bookings sink below the live ones, most recent first.
			switch {
			case a.Live != b.Live && a.Live:
				c = -1
			case a.Live != b.Live:
				c = 1
			case !a.Live:
				c = b.End().Compare(a.End())
			default:
				c = a.Expires.Compare(b.Expires)
			}
		case ByOwner:
			c = strings.Compare(a.User, b.User)
		case ByDevice:
			c = cmp.Compare(a.Device, b.Device)
		case ByMemory:
			c = cmp.Compare(a.InUse, b.InUse)
		}
		return cmp.Or(o.apply(c), cmp.Compare(a.ID, b.ID))
	})
}

// The bookings table's columns. ELAPSED is a bar of the booking's time
// gone by; it takes what the others leave.
const (
	bkMark = iota
	bkID
	bkHost
	bkOwner
	bkGPU
	bkShare
	bkInUse
	bkLeft
	bkElapsed
	bkState
	bkProcs
	bkCommand
)

var bookingColumns = []widget.Column{
	bkMark:    {Width: widget.MarkWidth},
	bkID:      {Title: "ID", Width: 6},
	bkHost:    {Title: "HOST", Width: 10},
	bkOwner:   {Title: "OWNER", Width: 10},
	bkGPU:     {Title: "GPU", Width: 3},
	bkShare:   {Title: "BOOKED", Width: 14},
	bkInUse:   {Title: "IN USE", Width: 9, Right: true},
	bkLeft:    {Title: "LEFT", Width: 8, Right: true},
	bkElapsed: {Title: "ELAPSED", Flex: true, Min: 5, Max: 30},
	bkState:   {Title: "STATE", Width: 12},
	bkProcs:   {Title: "PROCS", Width: 5, Right: true},
	// COMMAND is given the room a wide terminal has left (setColumns).
	bkCommand: {Title: "COMMAND"},
}

// minCommand is the least room for a bookings COMMAND column to be worth
// showing.
const minCommand = 20

// bookingColumnsOneHost are the columns on a ledger of one host's (a
// file): no HOST.
var bookingColumnsOneHost = widget.Without(bookingColumns, bkHost)

// bookingCells is everything a bookings row shows; the row is drawn from
// it alone.
type bookingCells struct {
	id      uint64
	host    string
	user    string
	gpus    string // 0, or 0-3 for a booking of several
	booked  string
	InUse   string
	Over    bool // its processes use more memory than booked
	Left    string
	Elapsed int // cells of the ELAPSED bar filled
	Status  domain.BookingStatus
	idle    string // how long a live booking has sat idle; "" while it works
	starts  string // when a booking ahead starts: "14:00", "Tue 14:00"
	procs   int
	mine    bool
	command string
}

// leftStart is when a booking ahead starts, in LEFT's 8 cells: the time on
// now's day, else the weekday too.
func leftStart(t, now time.Time) string {
	s := widget.StartClock(t, now)
	if len(s) > 5 {
		s = t.Local().Format("Mon15:04")
	}
	return s
}

// Bookings lists bookings with their countdowns.
type Bookings struct {
	Table    widget.Table[BookingRow, bookingCells]
	warnLead time.Duration
	specs    []widget.Column // the columns for the ledger: with HOST or without
	noUse    bool            // no row has processes: IN USE is all "-"
}

func NewBookings(sh *widget.Shared) *Bookings {
	t := &Bookings{warnLead: policy.Default().WarnLead}
	t.specs = bookingColumnsOneHost
	t.Table.Init(sh, bookingColumnsOneHost, "  No bookings to show. Press n to book a GPU.")
	t.Table.ID = func(r BookingRow) uint64 { return r.ID }
	t.Table.Cells = t.Cells
	t.Table.Draw = t.draw
	return t
}

func (t *Bookings) Title() string { return fmt.Sprintf("Bookings (%d)", len(t.Table.Rows)) }

func (t *Bookings) SetSize(width, height int) {
	t.Table.SetSize(width, height)
	t.setColumns()
}

// setColumns lays out the tab's columns; where they do not all fit, an IN
// USE column with nothing to say gives way before STATE is cut.
func (t *Bookings) setColumns() {
	specs := t.specs
	if t.noUse && widget.ColumnsWidth(specs) > t.Table.Width {
		specs = slices.Clone(specs)
		specs[bkInUse].Width = 0
	}
	// A wide terminal's room, past the ELAPSED bar at its widest, goes to
	// what the bookings' processes run.
	full := slices.Clone(specs)
	full[bkElapsed].Min = full[bkElapsed].Max
	if room := t.Table.Width - widget.ColumnsWidth(full) - 1; !t.noUse && room >= minCommand {
		specs = full
		specs[bkElapsed].Min = bookingColumns[bkElapsed].Min
		specs[bkCommand].Width = room
	}
	t.Table.SetColumns(specs)
}

func (t *Bookings) SetRows(r *Readings, f Filter, now time.Time) {
	t.warnLead = r.Policy.WarnLead
	specs := bookingColumnsOneHost
	if slices.ContainsFunc(r.Parts, func(p core.Partition) bool { return p.Host != "" }) {
		specs = bookingColumns // a ledger many hosts share: whose GPU each holds
	}
	rows := bookingRows(r, f, t.Table.Shared.Me.UID, now)
	col, ok := bookingSorted[f.SortBy.By]
	if !ok {
		col = -1
	}
	t.specs = markSorted(specs, col, f.SortBy)
	t.noUse = !slices.ContainsFunc(rows, func(r BookingRow) bool { return r.procs > 0 })
	t.setColumns()
	t.Table.SetRows(rows)
}

func (t *Bookings) Selected() (BookingRow, bool) { return t.Table.Selected() }

func (t *Bookings) Update(msg tea.KeyMsg) bool { return t.Table.Update(msg) }

func (t *Bookings) Enable(on bool) { t.Table.Enable(on) }

func (t *Bookings) ShortHelp() []key.Binding { return t.Table.ShortHelp() }

func (t *Bookings) FullHelp() [][]key.Binding { return t.Table.FullHelp() }

func (t *Bookings) View(now time.Time) []string { return t.Table.View(now) }

func (t *Bookings) SortKeys() []SortKey { return bookingSorts }

// Device is the selected booking's GPU when it is one of this host's: the
// app reads only this host's GPUs.
func (t *Bookings) Device() (int, bool) {
	r, ok := t.Table.Selected()
	return r.Device, ok && r.Host == t.Table.Shared.Host
}

func (t *Bookings) Cells(r BookingRow, now time.Time, cols widget.Columns) bookingCells {
	// Only the rows on screen are formatted, each frame: a few dozen, of
	// maybe thousands.
	c := bookingCells{id: r.ID, host: r.Host, user: r.User, gpus: human.FormatGPUs("", r.GPUs()), procs: r.procs, mine: r.Mine, command: human.Printable(r.command),
		booked: human.FormatPercent(r.SharePPM) + " " + human.FormatBytes(r.Bytes), InUse: "-", Over: r.InUse > r.Bytes,
		Status: r.Status(now, t.warnLead), Left: "-"}
	switch c.Status {
	case domain.StatusLive:
		c.idle = human.FormatIdleFor(r.Partition.Partition, r.Usage, now)
	case domain.StatusUpcoming:
		c.starts = widget.StartClock(r.Start, now)
	}
	if r.procs > 0 {
		c.InUse = human.FormatBytes(r.InUse)
	}
	c.Left = view.BookingLeft(r.Partition.Partition, now, view.TimeLeft)
	if c.Status == domain.StatusUpcoming {
		// Not yet begun: when it begins, not a length that reads as time left.
		c.Left = leftStart(r.Start, now)
	}
	frac := 1.0
	switch {
	case r.Upcoming(now):
		frac = 0
	case r.LiveAt(now):
		if total := r.Expires.Sub(r.Start); total > 0 {
			frac = float64(now.Sub(r.Start)) / float64(total)
		}
	}
	c.Elapsed = widget.BarCells(frac, cols.Widths[bkElapsed])
	return c
}

func (t *Bookings) draw(c bookingCells, selected bool, cols widget.Columns) string {
	st := &t.Table.Shared.Styles
	width := t.Table.Width
	mark := []rune("  ")
	if selected {
		mark[0] = '▸'
	}
	if c.mine {
		mark[1] = '•'
	}
	cell := func(i int, text string) string { return cols.Cell(i, text) }
	stateText := string(c.Status)
	switch {
	case c.idle == human.IdleUnderAMinute:
		stateText = "idle" // live, and nobody uses it
	case c.idle != "":
		stateText = "idle " + c.idle
	case c.starts != "" && len(c.starts) > 5:
		stateText = "on " + c.starts // booked ahead, another day
	case c.starts != "":
		stateText = "starts " + c.starts
	}
	id, owner, left, state, inUse := cell(bkID, "#"+strconv.FormatUint(c.id, 10)), cell(bkOwner, human.Printable(c.user)),
		cell(bkLeft, c.Left), cell(bkState, stateText), cell(bkInUse, c.InUse)
	host := cell(bkHost, human.Printable(c.host))
	barW := cols.Widths[bkElapsed]
	if selected || c.Status.Ended() {
		// One style over the whole line: the highlight unbroken, or the
		// whole row faded.
		line := cols.Join(string(mark), id, host, owner, cell(bkGPU, c.gpus), cell(bkShare, c.booked), inUse, left,
			widget.Bar(c.Elapsed, barW, nil, nil), state, cell(bkProcs, strconv.Itoa(c.procs)), cell(bkCommand, c.command))
		if selected {
			return st.Selected.Render(widget.Fit(line, width))
		}
		return st.Ended.Render(widget.Cut(line, width))
	}
	if c.mine {
		owner = st.Mine.Render(owner)
	} else {
		owner = st.Owner(c.user).Render(owner)
	}
	if c.Over {
		inUse = st.OverBudget.Render(inUse)
	}
	filled := &st.TimeUsed
	if c.idle != "" {
		state = st.IdleLabel.Render(state)
	}
	if c.starts != "" {
		state = st.Faint.Render(state)
	}
	if c.Status == domain.StatusEndingSoon {
		left, state, filled = st.EndingSoon.Render(left), st.EndingSoon.Render(state), &st.TimeSoon
	}
	markCell := string(mark)
	if c.mine {
		markCell = st.Mine.Render(markCell)
	}
	line := cols.Join(markCell, id, host, owner, cell(bkGPU, c.gpus), cell(bkShare, c.booked), inUse, left,
		widget.Bar(c.Elapsed, barW, filled, &st.TimeEmpty), state, cell(bkProcs, strconv.Itoa(c.procs)), st.Faint.Render(cell(bkCommand, c.command)))
	return widget.Cut(line, width)
}
