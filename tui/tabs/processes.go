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

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// processRow is a GPU process as the table shows it.
type processRow struct {
	admission.Attribution
	mine bool
}

// processRows shapes the processes table: every GPU process, kept by the
// filter and sorted.
func processRows(r *Readings, f Filter, me int) []processRow {
	var rows []processRow
	for _, a := range r.Attrs {
		row := processRow{Attribution: a, mine: a.UID == me}
		if f.keeps(row.mine, a.User, a.Command, strconv.Itoa(a.PID), "#"+strconv.FormatUint(a.Partition, 10)) {
			rows = append(rows, row)
		}
	}
	sortProcesses(rows, f.SortBy)
	return rows
}

// processSorts are what the processes table can be ordered by.
var processSorts = []SortKey{ByBooking, ByMemory, BySM, ByOwner, ByDevice, ByID}

// processSorted is the column each order marks.
var processSorted = map[SortKey]int{ByBooking: prBooking, ByMemory: prMemory, BySM: prSM, ByOwner: prUser, ByDevice: prGPU, ByID: prPID}

func sortProcesses(rows []processRow, o Order) {
	slices.SortStableFunc(rows, func(a, b processRow) int {
		var c int
		switch o.By {
		case ByOwner:
			c = strings.Compare(a.User, b.User)
		case ByID:
			c = cmp.Compare(a.PID, b.PID)
		case ByBooking:
			c = cmp.Compare(a.Partition, b.Partition)
		case ByDevice:
			c = cmp.Compare(a.Device, b.Device)
		case ByMemory:
			c = cmp.Compare(a.MemoryUsed, b.MemoryUsed)
		case BySM:
			c = cmp.Compare(a.SM, b.SM)
		}
		return cmp.Or(o.apply(c), cmp.Compare(a.Device, b.Device), cmp.Compare(a.PID, b.PID))
	})
}

// The processes table's columns; the command takes what is left.
// CONTAINER shows only while a process runs in a container.
const (
	prMark = iota
	prPID
	prUser
	prGPU
	prMemory
	prSM
	prBooking
	prContainer
	prCommand
)

var processColumns = []widget.Column{
	prMark:      {Width: widget.MarkWidth},
	prPID:       {Title: "PID", Width: 8, Right: true},
	prUser:      {Title: "USER", Width: 10},
	prGPU:       {Title: "GPU", Width: 3},
	prMemory:    {Title: "MEMORY", Width: 10, Right: true},
	prSM:        {Title: "SM", Width: 4, Right: true},
	prBooking:   {Title: "BOOKING", Width: 15},
	prContainer: {Title: "CONTAINER", Width: 12},
	prCommand:   {Title: "COMMAND", Flex: true},
}

// processColumnsBare are the columns while no process runs in a container.
var processColumnsBare = widget.Without(processColumns, prContainer)

// processCells is everything a processes row shows.
type processCells struct {
	pid       int
	user      string
	device    int
	memory    uint64
	sm        int
	verdict   admission.Verdict
	booking   string
	container string
	command   string
}

// Processes lists every GPU process and what it counts against.
type Processes struct {
	Table widget.Table[processRow, processCells]
}

func NewProcesses(sh *widget.Shared) *Processes {
	t := &Processes{}
	t.Table.Init(sh, processColumns, "  No GPU processes to show.")
	t.Table.ID = func(r processRow) uint64 { return uint64(r.PID) }
	t.Table.Cells = func(r processRow, _ time.Time, _ widget.Columns) processCells {
		return processCells{pid: r.PID, user: widget.OrDash(human.Printable(r.User)), device: r.Device, memory: r.MemoryUsed, sm: r.SM,
			verdict: r.Verdict, booking: view.Verdict(r.Attribution), container: widget.OrDash(human.Printable(r.Container.Label())),
			command: human.Printable(r.Command)}
	}
	t.Table.Draw = t.draw
	return t
}

func (t *Processes) Title() string { return fmt.Sprintf("Processes (%d)", len(t.Table.Rows)) }

func (t *Processes) SetSize(width, height int) { t.Table.SetSize(width, height) }

func (t *Processes) SetRows(r *Readings, f Filter, _ time.Time) {
	rows := processRows(r, f, t.Table.Shared.Me.UID)
	specs := processColumnsBare
	if slices.ContainsFunc(rows, func(r processRow) bool { return r.Container.InContainer() }) {
		specs = processColumns
	}
	col, ok := processSorted[f.SortBy.By]
	if !ok {
		col = -1
	}
	t.Table.SetColumns(markSorted(specs, col, f.SortBy))
	t.Table.SetRows(rows)
}

func (t *Processes) Update(msg tea.KeyMsg) bool { return t.Table.Update(msg) }

func (t *Processes) SortKeys() []SortKey { return processSorts }

func (t *Processes) Device() (int, bool) { r, ok := t.Table.Selected(); return r.Device, ok }

func (t *Processes) Enable(on bool) { t.Table.Enable(on) }

func (t *Processes) ShortHelp() []key.Binding { return t.Table.ShortHelp() }

func (t *Processes) FullHelp() [][]key.Binding { return t.Table.FullHelp() }

func (t *Processes) View(now time.Time) []string { return t.Table.View(now) }

func (t *Processes) draw(c processCells, selected bool, cols widget.Columns) string {
	st := &t.Table.Shared.Styles
	mark := "  "
	if selected {
		mark = "▸ "
	}
	booking := cols.Cell(prBooking, c.booking)
	if !selected {
		switch c.verdict {
		case admission.Unbooked:
			booking = st.Unbooked.Render(booking)
		case admission.OverBudget:
			booking = st.OverBudget.Render(booking)
		case admission.Ended:
			booking = st.EndingSoon.Render(booking)
		}
	}
	line := cols.Join(mark, cols.Cell(prPID, strconv.Itoa(c.pid)), cols.Cell(prUser, c.user), cols.Cell(prGPU, strconv.Itoa(c.device)),
		cols.Cell(prMemory, human.FormatBytes(c.memory)), cols.Cell(prSM, widget.Reading(c.sm, "%d%%")), booking,
		cols.Cell(prContainer, c.container), cols.Cell(prCommand, c.command))
	if selected {
		return st.Selected.Render(widget.Fit(line, t.Table.Width))
	}
	return widget.Cut(line, t.Table.Width)
}
