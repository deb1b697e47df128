package tabs

import (
	"fmt"
	"strconv"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// QueueRow is a waiting request as the Queue tab shows it.
type QueueRow struct {
	admission.QueueEntry
	Mine bool
}

// queueRows shapes the Queue tab: the line in the order room goes to it
// (fair-share order, as `chronos queue` prints it), kept by the filter.
// The sort key does not apply: the order is the point.
func queueRows(r *Readings, f Filter, me int) []QueueRow {
	rows := make([]QueueRow, 0, len(r.Queue))
	for _, e := range r.Queue {
		row := QueueRow{QueueEntry: e, Mine: e.UID == me}
		if f.keeps(row.Mine, e.User, e.Reason, "#"+strconv.FormatUint(e.ID, 10)) {
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

var queueColumns = []widget.Column{
	qMark:  {Width: widget.MarkWidth},
	qPos:   {Title: "POS", Width: 3, Right: true},
	qID:    {Title: "REQ", Width: 5},
	qOwner: {Title: "OWNER", Width: 10},
	qGPU:   {Title: "GPU", Width: 5},
	qShare: {Title: "ASKS", Width: 9},
	qFor:   {Title: "FOR", Width: 6},
	qFair:  {Title: "FAIR", Width: 5, Right: true},
	qETA:   {Title: "ETA", Width: 9},
	qWhy:   {Title: "WHY", Flex: true, Min: 5},
}

// queueCells is everything a Queue row shows.
type queueCells struct {
	pos, id, user, gpu, share, length, fair, eta, why string
	mine                                              bool
}

// Queue shows the waiting line. Its rows are read only while it is on
// screen (see the app's Model.load); elsewhere it costs nothing.
type Queue struct {
	Table widget.Table[QueueRow, queueCells]
	read  bool // the rows are a reading of the line, not nothing yet
}

// What the Queue tab says with no rows: before the line is read, that it is
// being read — not that nobody waits.
const (
	queueEmpty   = "  Nobody is waiting. A booking that cannot start now can wait in line from the form (n)."
	queueReading = "  reading…"
)

func NewQueue(sh *widget.Shared) *Queue {
	t := &Queue{}
	t.Table.Init(sh, queueColumns, queueReading)
	t.Table.ID = func(r QueueRow) uint64 { return r.ID }
	t.Table.Cells = t.cells
	t.Table.Draw = t.draw
	return t
}

// Title counts the line only when it was read: off screen it is not.
func (t *Queue) Title() string {
	if !t.read {
		return "Queue"
	}
	return fmt.Sprintf("Queue (%d)", len(t.Table.Rows))
}

func (t *Queue) SetSize(width, height int) { t.Table.SetSize(width, height) }

func (t *Queue) SetRows(r *Readings, f Filter, _ time.Time) {
	t.read = r.QueueRead
	t.Table.Empty = queueReading
	if t.read {
		t.Table.Empty = queueEmpty
	}
	t.Table.SetRows(queueRows(r, f, t.Table.Shared.Me.UID))
}

func (t *Queue) Selected() (QueueRow, bool) { return t.Table.Selected() }

func (t *Queue) Update(msg tea.KeyMsg) bool { return t.Table.Update(msg) }

func (t *Queue) Enable(on bool) { t.Table.Enable(on) }

func (t *Queue) ShortHelp() []key.Binding { return t.Table.ShortHelp() }

func (t *Queue) FullHelp() [][]key.Binding { return t.Table.FullHelp() }

func (t *Queue) View(now time.Time) []string { return t.Table.View(now) }

func (t *Queue) SortKeys() []SortKey { return nil }

// Device is the GPU the selected request asks for, or where its ETA places
// it when it asked for any — when it is one of this host's.
func (t *Queue) Device() (int, bool) {
	r, ok := t.Table.Selected()
	if !ok || r.Host != t.Table.Shared.Host {
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

func (t *Queue) cells(r QueueRow, now time.Time, _ widget.Columns) queueCells {
	c := queueCells{pos: "-", id: "#" + strconv.FormatUint(r.ID, 10), user: human.Printable(r.User), gpu: human.Printable(requestGPU(r.QueueEntry, t.Table.Shared.Host)),
		share: human.FormatPercent(r.SharePPM), length: human.FormatDuration(r.Duration), eta: "-", why: human.Printable(r.Reason), mine: r.Mine}
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

func (t *Queue) draw(c queueCells, selected bool, cols widget.Columns) string {
	st := &t.Table.Shared.Styles
	mark := []rune("  ")
	if selected {
		mark[0] = '▸'
	}
	if c.mine {
		mark[1] = '•'
	}
	owner := cols.Cell(qOwner, c.user)
	markCell := string(mark)
	if !selected {
		if c.mine {
			owner, markCell = st.Mine.Render(owner), st.Mine.Render(markCell)
		} else {
			owner = st.Owner(c.user).Render(owner)
		}
	}
	line := cols.Join(markCell, cols.Cell(qPos, c.pos), cols.Cell(qID, c.id), owner, cols.Cell(qGPU, c.gpu), cols.Cell(qShare, c.share),
		cols.Cell(qFor, c.length), cols.Cell(qFair, c.fair), cols.Cell(qETA, c.eta), cols.Cell(qWhy, c.why))
	if selected {
		return st.Selected.Render(widget.Fit(line, t.Table.Width))
	}
	return widget.Cut(line, t.Table.Width)
}
