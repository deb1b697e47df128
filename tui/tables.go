package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/storage"
)

// tab is which table fills the lower half of the screen.
type tab int

const (
	bookingsTab tab = iota
	processesTab
)

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

// selection is the selected row in a list of rows and the first row shown.
type selection struct {
	at, offset int
}

// clamp keeps the selection on a row and in a window of height rows.
func (c *selection) clamp(rows, height int) {
	c.at = max(0, min(c.at, rows-1))
	height = max(1, height)
	if c.at < c.offset {
		c.offset = c.at
	}
	if c.at >= c.offset+height {
		c.offset = c.at - height + 1
	}
	c.offset = max(0, min(c.offset, rows-height))
}

// bookingRow is a booking as the table shows it.
type bookingRow struct {
	core.Partition
	procs    int    // GPU processes counting against it
	commands string // their commands, for the filter
	mine     bool
	live     bool // when the rows were derived
}

// bookingsTable lists bookings with live countdowns.
type bookingsTable struct {
	c    *common
	rows []bookingRow
	cur  selection
	// hosts: the ledger is many hosts', and a HOST column says whose GPU
	// each booking holds.
	hosts bool
}

func (t *bookingsTable) selected() (bookingRow, bool) {
	if t.cur.at < 0 || t.cur.at >= len(t.rows) {
		return bookingRow{}, false
	}
	return t.rows[t.cur.at], true
}

// selectID moves the selection to the booking with that id, if shown.
func (t *bookingsTable) selectID(id uint64) {
	for i, r := range t.rows {
		if r.ID == id {
			t.cur.at = i
		}
	}
}

// Bookings columns; the time-used bar takes what is left of the width.
const (
	colMark   = 2
	colID     = 6
	colOwner  = 10
	colGPU    = 3
	colHost   = 10
	colShare  = 14
	colLeft   = 11
	colState  = 11
	colProcs  = 5
	bookFixed = colMark + colID + 1 + colOwner + 1 + colGPU + 1 + colShare + 1 + colLeft + 1 + colState + 1 + colProcs
)

// maxTimeBar caps the time-used bar; past it a longer bar says nothing more.
const maxTimeBar = 30

// pad cuts or pads plain text to w cells.
func pad(s string, w int) string { return fit(s, w) }

func padLeft(s string, w int) string {
	if n := len(s); n < w {
		return strings.Repeat(" ", w-n) + s
	}
	return s
}

func (t bookingsTable) View(now time.Time, warnLead time.Duration, width, height int) []string {
	st := &t.c.styles
	hostW := 0
	if t.hosts {
		hostW = colHost + 1
	}
	barW := min(maxTimeBar, width-bookFixed-hostW-1)
	if barW < 5 {
		barW = 0
	}
	head := pad("", colMark) + pad("ID", colID) + " " + t.hostCell("HOST") + pad("OWNER", colOwner) + " " + pad("GPU", colGPU) + " " +
		pad("SHARE", colShare) + " " + pad("LEFT", colLeft) + " "
	if barW > 0 {
		head += pad("USED", barW) + " "
	}
	head += pad("STATE", colState) + " " + padLeft("PROCS", colProcs)
	out := []string{st.TableHeader.Render(cut(head, width))}
	if len(t.rows) == 0 {
		return append(out, st.Faint.Render("  No bookings to show. Press n to book a GPU."))
	}
	t.cur.clamp(len(t.rows), height-1)
	end := min(len(t.rows), t.cur.offset+height-1)
	for i := t.cur.offset; i < end; i++ {
		out = append(out, t.row(t.rows[i], i == t.cur.at, now, warnLead, barW, width))
	}
	return out
}

func (t bookingsTable) row(r bookingRow, selected bool, now time.Time, warnLead time.Duration, barW, width int) string {
	st := &t.c.styles
	status := r.Partition.Status(now, warnLead)
	left := "-"
	if r.LiveAt(now) {
		left = Countdown(r.Expires.Sub(now))
	}
	mark := "  "
	switch {
	case selected && r.mine:
		mark = "▸•"
	case selected:
		mark = "▸ "
	case r.mine:
		mark = " •"
	}
	id := pad("#"+strconv.FormatUint(r.ID, 10), colID) + " " + t.hostCell(r.Host)
	owner := pad(Printable(r.User), colOwner)
	dev := pad(strconv.Itoa(r.Device), colGPU)
	share := pad(core.FormatPercent(r.SharePPM)+" "+core.FormatBytes(r.Bytes), colShare)
	leftCol := pad(left, colLeft)
	state := pad(string(status), colState)
	procs := padLeft(strconv.Itoa(r.procs), colProcs)

	frac := 1.0
	if total := r.Expires.Sub(r.Created); total > 0 && r.LiveAt(now) {
		frac = float64(now.Sub(r.Created)) / float64(total)
	}
	if selected {
		// One style over the whole line, so the highlight is unbroken.
		line := mark + id + owner + " " + dev + " " + share + " " + leftCol + " "
		if barW > 0 {
			line += plainBar(frac, barW) + " "
		}
		return st.Selected.Render(fit(line+state+" "+procs, width))
	}
	ended := status.Ended()
	soon := status == core.StatusEndingSoon
	switch {
	case ended:
		line := mark + id + owner + " " + dev + " " + share + " " + leftCol + " "
		if barW > 0 {
			line += plainBar(frac, barW) + " "
		}
		return st.Ended.Render(cut(line+state+" "+procs, width))
	case r.mine:
		owner = st.Mine.Render(owner)
	default:
		owner = st.Owner(r.User).Render(owner)
	}
	barStyle := st.TimeUsed
	if soon {
		leftCol, state = st.EndingSoon.Render(leftCol), st.EndingSoon.Render(state)
		barStyle = st.TimeSoon
	}
	line := st.Mine.Render(mark) + id + owner + " " + dev + " " + share + " " + leftCol + " "
	if barW > 0 {
		line += bar(frac, barW, barStyle, st.TimeEmpty) + " "
	}
	return cut(line+state+" "+procs, width)
}

// hostCell is the HOST column's cell and its space, when it is shown.
func (t bookingsTable) hostCell(host string) string {
	if !t.hosts {
		return ""
	}
	return pad(Printable(host), colHost) + " "
}

// plainBar is a bar without colour, for rows drawn in one style.
func plainBar(frac float64, width int) string {
	n := max(0, min(width, int(frac*float64(width)+0.5)))
	return strings.Repeat("█", n) + strings.Repeat("░", width-n)
}

// processRow is a GPU process as the table shows it.
type processRow struct {
	core.Attribution
	mine bool
}

// processesTable lists every GPU process and what it counts against.
type processesTable struct {
	c    *common
	rows []processRow
	cur  selection
}

const (
	colPID       = 8
	colPUser     = 10
	colMem       = 10
	colSM        = 4
	colBooking   = 15
	colContainer = 12 // shown only while a process runs in a container
	procFixed    = colMark + colPID + 1 + colPUser + 1 + colGPU + 1 + colMem + 1 + colSM + 1 + colBooking + 1
)

// verdictText says what a process counts against, in the words both the
// app and `chronos stats` show: "#7", "OVER BUDGET #7", "ENDED #7",
// "UNBOOKED", or "FALSE CLAIM #7" for an unbooked process whose environment
// names someone else's booking.
func verdictText(a core.Attribution) string {
	switch a.Verdict {
	case core.Unbooked:
		if a.Claimed != 0 {
			return fmt.Sprintf("FALSE CLAIM #%d", a.Claimed)
		}
		return "UNBOOKED"
	case core.OverBudget:
		return fmt.Sprintf("OVER BUDGET #%d", a.Partition)
	case core.Ended:
		return fmt.Sprintf("ENDED #%d", a.Partition)
	}
	return fmt.Sprintf("#%d", a.Partition)
}

func (t processesTable) View(width, height int) []string {
	st := &t.c.styles
	containers := false
	for _, r := range t.rows {
		containers = containers || r.Container.InContainer()
	}
	// container is the CONTAINER cell, "" while no process runs in one.
	container := func(s string) string {
		if !containers {
			return ""
		}
		return pad(s, colContainer) + " "
	}
	head := pad("", colMark) + padLeft("PID", colPID) + " " + pad("USER", colPUser) + " " + pad("GPU", colGPU) + " " +
		padLeft("MEMORY", colMem) + " " + padLeft("SM", colSM) + " " + pad("BOOKING", colBooking) + " " + container("CONTAINER") + "COMMAND"
	out := []string{st.TableHeader.Render(cut(head, width))}
	if len(t.rows) == 0 {
		return append(out, st.Faint.Render("  No GPU processes to show."))
	}
	t.cur.clamp(len(t.rows), height-1)
	end := min(len(t.rows), t.cur.offset+height-1)
	cmdW := max(0, width-procFixed-len(container("")))
	for i := t.cur.offset; i < end; i++ {
		r := t.rows[i]
		mark := "  "
		if i == t.cur.at {
			mark = "▸ "
		}
		sm := "n/a"
		if r.SM >= 0 {
			sm = strconv.Itoa(r.SM) + "%"
		}
		user := Printable(r.User)
		if user == "" {
			user = "?"
		}
		booking := pad(verdictText(r.Attribution), colBooking)
		line := mark + padLeft(strconv.Itoa(r.PID), colPID) + " " + pad(user, colPUser) + " " + pad(strconv.Itoa(r.Device), colGPU) + " " +
			padLeft(core.FormatBytes(r.MemoryUsed), colMem) + " " + padLeft(sm, colSM) + " "
		label := Printable(r.Container.Label())
		if label == "" {
			label = "-"
		}
		cmd := container(label) + cut(Printable(r.Command), cmdW)
		if i == t.cur.at {
			out = append(out, st.Selected.Render(fit(line+booking+" "+cmd, width)))
			continue
		}
		switch r.Verdict {
		case core.Unbooked:
			booking = st.Unbooked.Render(booking)
		case core.OverBudget:
			booking = st.OverBudget.Render(booking)
		case core.Ended:
			booking = st.EndingSoon.Render(booking)
		}
		out = append(out, cut(line+booking+" "+cmd, width))
	}
	return out
}

// shownAfterEnd is how long an ended booking stays in the table, so that a
// release or an expiry is seen rather than a row silently vanishing.
const shownAfterEnd = 10 * time.Minute

func endedAt(p storage.Partition) time.Time {
	if p.State == storage.Released && !p.Ended.IsZero() {
		return p.Ended
	}
	if !p.Ended.IsZero() && p.Ended.Before(p.Expires) {
		return p.Ended
	}
	return p.Expires
}
