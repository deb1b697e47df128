package tui

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
)

// bookingRow is a booking as the table shows it.
type bookingRow struct {
	core.Partition
	procs int    // GPU processes counting against it
	inUse uint64 // the GPU memory they use
	// command is what they run, as one line: shown where the terminal is
	// wide enough for a COMMAND column.
	command string
	mine    bool
	live    bool // when the rows were shaped
}

// shownAfterEnd is how long an ended booking stays in the table, so that a
// release or an expiry is seen rather than a row silently vanishing.
const shownAfterEnd = 10 * time.Minute

// endedAt is when a booking stopped holding its share.
func endedAt(p domain.Partition) time.Time { return p.End() }

// bookingRows shapes the bookings table: live bookings and those ended in
// the last shownAfterEnd, each with what its processes use, kept by the
// filter and sorted.
func bookingRows(r *readings, f rowFilter, me int, now time.Time) []bookingRow {
	type use struct {
		procs    int
		bytes    uint64
		commands []string
	}
	uses := map[uint64]*use{}
	for _, a := range r.attrs {
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
	var rows []bookingRow
	for _, p := range r.parts {
		ended := p.EndedAt(now) // one booked ahead is not: it can be released or extended
		if ended && now.Sub(endedAt(p.Partition)) > shownAfterEnd {
			continue
		}
		row := bookingRow{Partition: p, mine: p.UID == me, live: !ended}
		var commands []string
		if u := uses[p.ID]; u != nil {
			row.procs, row.inUse, commands = u.procs, u.bytes, u.commands
			row.command = strings.Join(u.commands, "; ")
		}
		if f.keeps(row.mine, append(commands, p.User, "#"+strconv.FormatUint(p.ID, 10))...) {
			rows = append(rows, row)
		}
	}
	sortBookings(rows, f.sortBy)
	return rows
}

// bookingSorts are what the bookings table can be ordered by.
var bookingSorts = []sortKey{byTimeLeft, byOwner, byDevice, byID, byMemory}

// bookingSorted is the column each order marks.
var bookingSorted = map[sortKey]int{byTimeLeft: bkLeft, byOwner: bkOwner, byDevice: bkGPU, byID: bkID, byMemory: bkInUse}

func sortBookings(rows []bookingRow, o sortOrder) {
	slices.SortStableFunc(rows, func(a, b bookingRow) int {
		var c int
		switch o.by {
		case byTimeLeft:
			// Ended bookings sink below the live ones, most recent first.
			switch {
			case a.live != b.live && a.live:
				c = -1
			case a.live != b.live:
				c = 1
			case !a.live:
				c = endedAt(b.Partition.Partition).Compare(endedAt(a.Partition.Partition))
			default:
				c = a.Expires.Compare(b.Expires)
			}
		case byOwner:
			c = strings.Compare(a.User, b.User)
		case byDevice:
			c = cmp.Compare(a.Device, b.Device)
		case byMemory:
			c = cmp.Compare(a.inUse, b.inUse)
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

var bookingColumns = []column{
	bkMark:    {width: markWidth},
	bkID:      {title: "ID", width: 6},
	bkHost:    {title: "HOST", width: 10},
	bkOwner:   {title: "OWNER", width: 10},
	bkGPU:     {title: "GPU", width: 3},
	bkShare:   {title: "BOOKED", width: 14},
	bkInUse:   {title: "IN USE", width: 9, right: true},
	bkLeft:    {title: "LEFT", width: 8, right: true},
	bkElapsed: {title: "ELAPSED", flex: true, min: 5, max: 30},
	bkState:   {title: "STATE", width: 12},
	bkProcs:   {title: "PROCS", width: 5, right: true},
	// COMMAND is given the room a wide terminal has left (setColumns).
	bkCommand: {title: "COMMAND"},
}

// minCommand is the least room for a bookings COMMAND column to be worth
// showing.
const minCommand = 20

// bookingColumnsOneHost are the columns on a ledger of one host's (a
// file): no HOST.
var bookingColumnsOneHost = func() []column {
	c := slices.Clone(bookingColumns)
	c[bkHost].width = 0
	return c
}()

// bookingCells is everything a bookings row shows; the row is drawn from
// it alone.
type bookingCells struct {
	id      uint64
	host    string
	user    string
	gpus    string // 0, or 0-3 for a booking of several
	booked  string
	inUse   string
	over    bool // its processes use more memory than booked
	left    string
	elapsed int // cells of the ELAPSED bar filled
	status  domain.BookingStatus
	idle    string // how long a live booking has sat idle; "" while it works
	starts  string // when a booking ahead starts: "14:00", "Tue 14:00"
	procs   int
	mine    bool
	command string
}

// startClock is when something starts, to the minute, as a row has room
// for: the time on now's day, else the weekday too.
func startClock(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04")
	}
	return t.Format("Mon 15:04")
}

// leftStart is when a booking ahead starts, in LEFT's 8 cells: the time on
// now's day, else the weekday too.
func leftStart(t, now time.Time) string {
	s := startClock(t, now)
	if len(s) > 5 {
		s = t.Local().Format("Mon15:04")
	}
	return s
}

// bookingsTab lists bookings with their countdowns.
type bookingsTab struct {
	table    table[bookingRow, bookingCells]
	warnLead time.Duration
	specs    []column // the columns for the ledger: with HOST or without
	noUse    bool     // no row has processes: IN USE is all "-"
}

func newBookingsTab(sh *shared) *bookingsTab {
	t := &bookingsTab{warnLead: policy.Default().WarnLead}
	t.specs = bookingColumnsOneHost
	t.table.init(sh, bookingColumnsOneHost, "  No bookings to show. Press n to book a GPU.")
	t.table.id = func(r bookingRow) uint64 { return r.ID }
	t.table.cells = t.cells
	t.table.draw = t.draw
	return t
}

func (t *bookingsTab) title() string { return fmt.Sprintf("Bookings (%d)", len(t.table.rows)) }

func (t *bookingsTab) setSize(width, height int) {
	t.table.setSize(width, height)
	t.setColumns()
}

// setColumns lays out the tab's columns; where they do not all fit, an IN
// USE column with nothing to say gives way before STATE is cut.
func (t *bookingsTab) setColumns() {
	specs := t.specs
	if t.noUse && columnsWidth(specs) > t.table.width {
		specs = slices.Clone(specs)
		specs[bkInUse].width = 0
	}
	// A wide terminal's room, past the ELAPSED bar at its widest, goes to
	// what the bookings' processes run.
	full := slices.Clone(specs)
	full[bkElapsed].min = full[bkElapsed].max
	if room := t.table.width - columnsWidth(full) - 1; !t.noUse && room >= minCommand {
		specs = full
		specs[bkElapsed].min = bookingColumns[bkElapsed].min
		specs[bkCommand].width = room
	}
	t.table.setColumns(specs)
}

func (t *bookingsTab) setRows(r *readings, f rowFilter, now time.Time) {
	t.warnLead = r.policy.WarnLead
	specs := bookingColumnsOneHost
	if slices.ContainsFunc(r.parts, func(p core.Partition) bool { return p.Host != "" }) {
		specs = bookingColumns // a ledger many hosts share: whose GPU each holds
	}
	rows := bookingRows(r, f, t.table.sh.me.UID, now)
	col, ok := bookingSorted[f.sortBy.by]
	if !ok {
		col = -1
	}
	t.specs = markSorted(specs, col, f.sortBy)
	t.noUse = !slices.ContainsFunc(rows, func(r bookingRow) bool { return r.procs > 0 })
	t.setColumns()
	t.table.setRows(rows)
}

func (t *bookingsTab) selected() (bookingRow, bool) { return t.table.selected() }

func (t *bookingsTab) update(msg tea.KeyMsg) bool { return t.table.update(msg) }

func (t *bookingsTab) enable(on bool) { t.table.enable(on) }

func (t *bookingsTab) ShortHelp() []key.Binding { return t.table.ShortHelp() }

func (t *bookingsTab) FullHelp() [][]key.Binding { return t.table.FullHelp() }

func (t *bookingsTab) view(now time.Time) []string { return t.table.view(now) }

// device is the selected booking's GPU when it is one of this host's: the
// app reads only this host's GPUs.
func (t *bookingsTab) sortKeys() []sortKey { return bookingSorts }

func (t *bookingsTab) device() (int, bool) {
	r, ok := t.table.selected()
	return r.Device, ok && r.Host == t.table.sh.host
}

func (t *bookingsTab) cells(r bookingRow, now time.Time, cols columns) bookingCells {
	// Only the rows on screen are formatted, each frame: a few dozen, of
	// maybe thousands.
	c := bookingCells{id: r.ID, host: r.Host, user: r.User, gpus: human.FormatGPUs("", r.GPUs()), procs: r.procs, mine: r.mine, command: human.Printable(r.command),
		booked: human.FormatPercent(r.SharePPM) + " " + human.FormatBytes(r.Bytes), inUse: "-", over: r.inUse > r.Bytes,
		status: r.Status(now, t.warnLead), left: "-"}
	switch c.status {
	case domain.StatusLive:
		c.idle = human.FormatIdleFor(r.Partition.Partition, r.Usage, now)
	case domain.StatusUpcoming:
		c.starts = startClock(r.Start, now)
	}
	if r.procs > 0 {
		c.inUse = human.FormatBytes(r.inUse)
	}
	c.left = view.BookingLeft(r.Partition.Partition, now, view.TimeLeft)
	if c.status == domain.StatusUpcoming {
		// Not yet begun: when it begins, not a length that reads as time left.
		c.left = leftStart(r.Start, now)
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
	c.elapsed = barCells(frac, cols.widths[bkElapsed])
	return c
}

func (t *bookingsTab) draw(c bookingCells, selected bool, cols columns) string {
	st := &t.table.sh.styles
	width := t.table.width
	mark := []rune("  ")
	if selected {
		mark[0] = '▸'
	}
	if c.mine {
		mark[1] = '•'
	}
	cell := func(i int, text string) string { return cols.cell(i, text) }
	stateText := string(c.status)
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
		cell(bkLeft, c.left), cell(bkState, stateText), cell(bkInUse, c.inUse)
	host := cell(bkHost, human.Printable(c.host))
	barW := cols.widths[bkElapsed]
	if selected || c.status.Ended() {
		// One style over the whole line: the highlight unbroken, or the
		// whole row faded.
		line := cols.join(string(mark), id, host, owner, cell(bkGPU, c.gpus), cell(bkShare, c.booked), inUse, left,
			bar(c.elapsed, barW, nil, nil), state, cell(bkProcs, strconv.Itoa(c.procs)), cell(bkCommand, c.command))
		if selected {
			return st.Selected.Render(fit(line, width))
		}
		return st.Ended.Render(cut(line, width))
	}
	if c.mine {
		owner = st.Mine.Render(owner)
	} else {
		owner = st.Owner(c.user).Render(owner)
	}
	if c.over {
		inUse = st.OverBudget.Render(inUse)
	}
	filled := &st.TimeUsed
	if c.idle != "" {
		state = st.IdleLabel.Render(state)
	}
	if c.starts != "" {
		state = st.Faint.Render(state)
	}
	if c.status == domain.StatusEndingSoon {
		left, state, filled = st.EndingSoon.Render(left), st.EndingSoon.Render(state), &st.TimeSoon
	}
	markCell := string(mark)
	if c.mine {
		markCell = st.Mine.Render(markCell)
	}
	line := cols.join(markCell, id, host, owner, cell(bkGPU, c.gpus), cell(bkShare, c.booked), inUse, left,
		bar(c.elapsed, barW, filled, &st.TimeEmpty), state, cell(bkProcs, strconv.Itoa(c.procs)), st.Faint.Render(cell(bkCommand, c.command)))
	return cut(line, width)
}
