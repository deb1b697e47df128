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

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/human"
)

// processRow is a GPU process as the table shows it.
type processRow struct {
	admission.Attribution
	mine bool
}

// processRows shapes the processes table: every GPU process, kept by the
// filter and sorted.
func processRows(r *readings, f rowFilter, me int) []processRow {
	var rows []processRow
	for _, a := range r.attrs {
		row := processRow{Attribution: a, mine: a.UID == me}
		if f.keeps(row.mine, a.User, a.Command, strconv.Itoa(a.PID), "#"+strconv.FormatUint(a.Partition, 10)) {
			rows = append(rows, row)
		}
	}
	sortProcesses(rows, f.sortBy)
	return rows
}

// processSorts are what the processes table can be ordered by.
var processSorts = []sortKey{byBooking, byMemory, bySM, byOwner, byDevice, byID}

// processSorted is the column each order marks.
var processSorted = map[sortKey]int{byBooking: prBooking, byMemory: prMemory, bySM: prSM, byOwner: prUser, byDevice: prGPU, byID: prPID}

func sortProcesses(rows []processRow, o sortOrder) {
	slices.SortStableFunc(rows, func(a, b processRow) int {
		var c int
		switch o.by {
		case byOwner:
			c = strings.Compare(a.User, b.User)
		case byID:
			c = cmp.Compare(a.PID, b.PID)
		case byBooking:
			c = cmp.Compare(a.Partition, b.Partition)
		case byDevice:
			c = cmp.Compare(a.Device, b.Device)
		case byMemory:
			c = cmp.Compare(a.MemoryUsed, b.MemoryUsed)
		case bySM:
			c = cmp.Compare(a.SM, b.SM)
		}
		return cmp.Or(o.apply(c), cmp.Compare(a.Device, b.Device), cmp.Compare(a.PID, b.PID))
	})
}

// verdictText says what a process counts against, in the words both the
// app and `chronos stats` show: "#7", "OVER BUDGET #7", "ENDED #7",
// "UNBOOKED", "FALSE CLAIM #7" for an unbooked process whose environment
// names someone else's booking, or "MPS SERVER".
func verdictText(a admission.Attribution) string {
	switch a.Verdict {
	case admission.Unbooked:
		if a.Claimed != 0 {
			return fmt.Sprintf("FALSE CLAIM #%d", a.Claimed)
		}
		return "UNBOOKED"
	case admission.OverBudget:
		return fmt.Sprintf("OVER BUDGET #%d", a.Partition)
	case admission.Ended:
		return fmt.Sprintf("ENDED #%d", a.Partition)
	case admission.MPSServer:
		return "MPS SERVER"
	}
	return fmt.Sprintf("#%d", a.Partition)
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

var processColumns = []column{
	prMark:      {width: markWidth},
	prPID:       {title: "PID", width: 8, right: true},
	prUser:      {title: "USER", width: 10},
	prGPU:       {title: "GPU", width: 3},
	prMemory:    {title: "MEMORY", width: 10, right: true},
	prSM:        {title: "SM", width: 4, right: true},
	prBooking:   {title: "BOOKING", width: 15},
	prContainer: {title: "CONTAINER", width: 12},
	prCommand:   {title: "COMMAND", flex: true},
}

// processColumnsBare are the columns while no process runs in a container.
var processColumnsBare = func() []column {
	c := slices.Clone(processColumns)
	c[prContainer].width = 0
	return c
}()

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

// processesTab lists every GPU process and what it counts against.
type processesTab struct {
	table table[processRow, processCells]
}

func newProcessesTab(sh *shared) *processesTab {
	t := &processesTab{}
	t.table.init(sh, processColumns, "  No GPU processes to show.")
	t.table.id = func(r processRow) uint64 { return uint64(r.PID) }
	t.table.cells = func(r processRow, _ time.Time, _ columns) processCells {
		return processCells{pid: r.PID, user: orDash(human.Printable(r.User)), device: r.Device, memory: r.MemoryUsed, sm: r.SM,
			verdict: r.Verdict, booking: verdictText(r.Attribution), container: orDash(human.Printable(r.Container.Label())),
			command: human.Printable(r.Command)}
	}
	t.table.draw = t.draw
	return t
}

func (t *processesTab) title() string { return fmt.Sprintf("Processes (%d)", len(t.table.rows)) }

func (t *processesTab) setSize(width, height int) { t.table.setSize(width, height) }

func (t *processesTab) setRows(r *readings, f rowFilter, _ time.Time) {
	rows := processRows(r, f, t.table.sh.me.UID)
	specs := processColumnsBare
	if slices.ContainsFunc(rows, func(r processRow) bool { return r.Container.InContainer() }) {
		specs = processColumns
	}
	col, ok := processSorted[f.sortBy.by]
	if !ok {
		col = -1
	}
	t.table.setColumns(markSorted(specs, col, f.sortBy))
	t.table.setRows(rows)
}

func (t *processesTab) update(msg tea.KeyMsg) bool { return t.table.update(msg) }

func (t *processesTab) sortKeys() []sortKey { return processSorts }

func (t *processesTab) device() (int, bool) { r, ok := t.table.selected(); return r.Device, ok }

func (t *processesTab) enable(on bool) { t.table.enable(on) }

func (t *processesTab) ShortHelp() []key.Binding { return t.table.ShortHelp() }

func (t *processesTab) FullHelp() [][]key.Binding { return t.table.FullHelp() }

func (t *processesTab) view(now time.Time) []string { return t.table.view(now) }

func (t *processesTab) draw(c processCells, selected bool, cols columns) string {
	st := &t.table.sh.styles
	mark := "  "
	if selected {
		mark = "▸ "
	}
	booking := cols.cell(prBooking, c.booking)
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
	line := cols.join(mark, cols.cell(prPID, strconv.Itoa(c.pid)), cols.cell(prUser, c.user), cols.cell(prGPU, strconv.Itoa(c.device)),
		cols.cell(prMemory, human.FormatBytes(c.memory)), cols.cell(prSM, reading(c.sm, "%d%%")), booking,
		cols.cell(prContainer, c.container), cols.cell(prCommand, c.command))
	if selected {
		return st.Selected.Render(fit(line, t.table.width))
	}
	return cut(line, t.table.width)
}
