package tui

import (
	"fmt"
	"strconv"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

// queueRow is a waiting request as the Queue tab shows it.
type queueRow struct {
	admission.QueueEntry
	mine bool
}

// queueRows shapes the Queue tab: the line in the order room goes to it
// (fair-share order, as `chronos queue` prints it), kept by the filter.
// The sort key does not apply: the order is the point.
func queueRows(r *readings, f rowFilter, me int) []queueRow {
	rows := make([]queueRow, 0, len(r.queue))
	for _, e := range r.queue {
		row := queueRow{QueueEntry: e, mine: e.UID == me}
		if f.keeps(row.mine, e.User, e.Reason, "#"+strconv.FormatUint(e.ID, 10)) {
			rows = append(rows, row)
		}
	}
	return rows
}

// The Queue tab's columns; WHY takes what is left.
const (
	qMark = iota
	qPos
	qID
	qOwner
	qGPU
	qShare
	qFor
	qFair
	qETA
	qWhy
)

var queueColumns = []column{
	qMark:  {width: markWidth},
	qPos:   {title: "POS", width: 3, right: true},
	qID:    {title: "REQ", width: 5},
	qOwner: {title: "OWNER", width: 10},
	qGPU:   {title: "GPU", width: 5},
	qShare: {title: "ASKS", width: 9},
	qFor:   {title: "FOR", width: 6},
	qFair:  {title: "FAIR", width: 5, right: true},
	qETA:   {title: "ETA", width: 9},
	qWhy:   {title: "WHY", flex: true, min: 5},
}

// queueCells is everything a Queue row shows.
type queueCells struct {
	pos, id, user, gpu, share, length, fair, eta, why string
	mine                                              bool
}

// queueTab shows the waiting line. Its rows are read only while it is on
// screen (see Model.load); elsewhere it costs nothing.
type queueTab struct {
	table table[queueRow, queueCells]
	read  bool // the rows are a reading of the line, not nothing yet
}

// What the Queue tab says with no rows: before the line is read, that it is
// being read — not that nobody waits.
const (
	queueEmpty   = "  Nobody is waiting. A booking that cannot start now can wait in line from the form (n)."
	queueReading = "  reading…"
)

func newQueueTab(sh *shared) *queueTab {
	t := &queueTab{}
	t.table.init(sh, queueColumns, queueReading)
	t.table.id = func(r queueRow) uint64 { return r.ID }
	t.table.cells = t.cells
	t.table.draw = t.draw
	return t
}

// title counts the line only when it was read: off screen it is not.
func (t *queueTab) title() string {
	if !t.read {
		return "Queue"
	}
	return fmt.Sprintf("Queue (%d)", len(t.table.rows))
}

func (t *queueTab) setSize(width, height int) { t.table.setSize(width, height) }

func (t *queueTab) setRows(r *readings, f rowFilter, _ time.Time) {
	t.read = r.queueRead
	t.table.empty = queueReading
	if t.read {
		t.table.empty = queueEmpty
	}
	t.table.setRows(queueRows(r, f, t.table.sh.me.UID))
}

func (t *queueTab) selected() (queueRow, bool) { return t.table.selected() }

func (t *queueTab) update(msg tea.KeyMsg) bool { return t.table.update(msg) }

func (t *queueTab) enable(on bool) { t.table.enable(on) }

func (t *queueTab) ShortHelp() []key.Binding { return t.table.ShortHelp() }

func (t *queueTab) FullHelp() [][]key.Binding { return t.table.FullHelp() }

func (t *queueTab) view(now time.Time) []string { return t.table.view(now) }

func (t *queueTab) sortKeys() []sortKey { return nil }

// device is the GPU the selected request asks for, or where its ETA places
// it when it asked for any — when it is one of this host's.
func (t *queueTab) device() (int, bool) {
	r, ok := t.table.selected()
	if !ok || r.Host != t.table.sh.host {
		return 0, false
	}
	if r.Device != domain.AnyDevice {
		return r.Device, true
	}
	return r.ETADevice, !r.ETA.IsZero()
}

// requestGPU names the GPU a request asks for as this host's people type
// it: 0, gpu3:0, any; and where its ETA places it when it asked for any.
func requestGPU(e admission.QueueEntry, here string) string {
	name := admission.AskedGPUs(here, e.Request)
	if e.Device == domain.AnyDevice && !e.ETA.IsZero() {
		name += "→" + human.FormatGPUs("", e.ETAGPUs())
	}
	return name
}

func (t *queueTab) cells(r queueRow, now time.Time, _ columns) queueCells {
	c := queueCells{pos: "-", id: "#" + strconv.FormatUint(r.ID, 10), user: human.Printable(r.User), gpu: human.Printable(requestGPU(r.QueueEntry, t.table.sh.host)),
		share: human.FormatPercent(r.SharePPM), length: human.FormatDuration(r.Duration), eta: "-", why: human.Printable(r.Reason), mine: r.mine}
	if r.Bytes > 0 {
		c.share = human.FormatBytes(r.Bytes)
	}
	if r.Position > 0 {
		c.pos = strconv.Itoa(r.Position)
		c.fair = strconv.FormatFloat(r.Factor, 'f', 3, 64)
	}
	if !r.ETA.IsZero() {
		c.eta = human.FormatTime(r.ETA, now)
		if len(c.eta) > 9 { // another day: the day and the time
			c.eta = r.ETA.Local().Format("Mon 15:04")
		}
	}
	return c
}

func (t *queueTab) draw(c queueCells, selected bool, cols columns) string {
	st := &t.table.sh.styles
	mark := []rune("  ")
	if selected {
		mark[0] = '▸'
	}
	if c.mine {
		mark[1] = '•'
	}
	owner := cols.cell(qOwner, c.user)
	markCell := string(mark)
	if !selected {
		if c.mine {
			owner, markCell = st.Mine.Render(owner), st.Mine.Render(markCell)
		} else {
			owner = st.Owner(c.user).Render(owner)
		}
	}
	line := cols.join(markCell, cols.cell(qPos, c.pos), cols.cell(qID, c.id), owner, cols.cell(qGPU, c.gpu), cols.cell(qShare, c.share),
		cols.cell(qFor, c.length), cols.cell(qFair, c.fair), cols.cell(qETA, c.eta), cols.cell(qWhy, c.why))
	if selected {
		return st.Selected.Render(fit(line, t.table.width))
	}
	return cut(line, t.table.width)
}
