package widget

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// Column is one column of a table: its title, its width in cells and
// whether its text sits to the right. A flexible column takes what the
// others leave, up to max cells (0: no limit), and is left out when fewer
// than min remain.
type Column struct {
	Title string
	Width int
	Right bool
	Flex  bool
	Min   int
	Max   int
}

// Without is a copy of cols with column i hidden (no width): a table's
// layout for when that column has nothing to show.
func Without(cols []Column, i int) []Column {
	c := slices.Clone(cols)
	c[i].Width = 0
	return c
}

// MarkWidth is the first column of every table: the selection marker and
// what else marks a row, with no gap after it.
const MarkWidth = 2

// Columns are a table's columns laid out at one width.
type Columns struct {
	specs  []Column
	Widths []int // 0 for a column left out
}

// layoutColumns gives each column its width in width cells; columns are
// separated by one space, the first (the marker) by none.
func layoutColumns(specs []Column, width int) Columns {
	c := Columns{specs: specs, Widths: make([]int, len(specs))}
	fixed, flex := 0, -1
	for i, s := range specs {
		if s.Flex {
			flex = i
			continue
		}
		c.Widths[i] = s.Width
		fixed += s.Width
		if i > 1 && s.Width > 0 {
			fixed++ // the space before it
		}
	}
	if flex >= 0 {
		w := width - fixed - 1
		if s := specs[flex]; s.Max > 0 {
			w = min(w, s.Max)
		}
		if w >= specs[flex].Min && w > 0 {
			c.Widths[flex] = w
		}
	}
	return c
}

// ColumnsWidth is the cells a line of specs takes with each flexible
// column at its least: more than the width, and the line is cut.
func ColumnsWidth(specs []Column) int {
	w := 0
	for i, s := range specs {
		cw := s.Width
		if s.Flex {
			cw = s.Min
		}
		if cw == 0 {
			continue
		}
		w += cw
		if i > 1 {
			w++
		}
	}
	return w
}

// Cell is text padded or cut to column i's width, on the column's side.
func (c Columns) Cell(i int, text string) string {
	if c.specs[i].Right {
		return PadLeft(text, c.Widths[i])
	}
	return Fit(text, c.Widths[i])
}

// Join puts cells (one per column, already padded) on one line, leaving
// out the columns that did not fit.
func (c Columns) Join(cells ...string) string {
	var b strings.Builder
	for i, s := range cells {
		if c.Widths[i] == 0 {
			continue
		}
		if i > 1 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}

// header is the titles, each in its column.
func (c Columns) header() string {
	cells := make([]string, len(c.specs))
	for i, s := range c.specs {
		cells[i] = c.Cell(i, s.Title)
	}
	return c.Join(cells...)
}

// tableKeys move the selection.
type tableKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
}

func defaultTableKeys() tableKeys {
	return tableKeys{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g", "top")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G", "bottom")),
	}
}

func (k *tableKeys) all() []*key.Binding {
	return []*key.Binding{&k.Up, &k.Down, &k.PageUp, &k.PageDown, &k.Top, &k.Bottom}
}

// selection is the selected row in a list of rows and the first row shown.
type selection struct {
	At, offset int
}

// clamp keeps the selection on a row and in a window of height rows.
func (c *selection) clamp(rows, height int) {
	c.At = max(0, min(c.At, rows-1))
	height = max(1, height)
	if c.At < c.offset {
		c.offset = c.At
	}
	if c.At >= c.offset+height {
		c.offset = c.At - height + 1
	}
	c.offset = max(0, min(c.offset, rows-height))
}

// Table is a list of rows on screen: a header from its columns, the window
// of rows that follows the selection, and the keys that move it. What a row
// shows comes from its tab in two steps: cells, a comparable value of
// everything the row shows now (its texts and flags), and draw, which makes
// the line from the cells alone. A row whose cells are what they were last
// frame is not drawn again: most frames only a countdown or two changed.
type Table[R any, C comparable] struct {
	Shared *Shared
	Keys   tableKeys
	specs  []Column
	Rows   []R
	ID     func(R) uint64
	Cells  func(r R, now time.Time, Cols Columns) C
	Draw   func(c C, Selected bool, Cols Columns) string
	Empty  string // what an empty table says

	Cur    selection
	chosen bool // the selection was moved to a row, by a key or the app
	Width  int
	Height int // lines, the header's included
	Cols   Columns
	head   string
	drawn  map[drawnRow[C]]string // last frame's lines
	spare  map[drawnRow[C]]string
}

// drawnRow is what one drawn line depended on.
type drawnRow[C comparable] struct {
	cells    C
	selected bool
}

func (t *Table[R, C]) Init(sh *Shared, specs []Column, empty string) {
	t.Shared, t.Keys, t.specs, t.Empty = sh, defaultTableKeys(), specs, empty
	t.drawn, t.spare = map[drawnRow[C]]string{}, map[drawnRow[C]]string{}
	t.SetSize(80, 10)
}

func (t *Table[R, C]) SetSize(width, height int) {
	if width != t.Width {
		t.Width = width
		t.layout()
	}
	t.Height = height
	t.Cur.clamp(len(t.Rows), t.window())
}

// SetColumns changes the columns, say to show one only while it has
// something to say.
func (t *Table[R, C]) SetColumns(specs []Column) {
	if !slices.Equal(specs, t.specs) {
		t.specs = specs
		t.layout()
	}
}

// layout sizes the columns to the width; lines drawn for other widths go.
func (t *Table[R, C]) layout() {
	t.Cols = layoutColumns(t.specs, t.Width)
	t.head = t.Shared.Styles.TableHeader.Render(Cut(t.Cols.header(), t.Width))
	clear(t.drawn)
}

// SetRows shows new rows. A selection moved to a row stays on that row
// (by id) while it is there; one never moved stays on the first row.
func (t *Table[R, C]) SetRows(rows []R) {
	sel, had := t.Selected()
	t.Rows = rows
	if had && t.chosen {
		t.SelectID(t.ID(sel))
	}
	t.Cur.clamp(len(t.Rows), t.window())
}

func (t *Table[R, C]) Selected() (R, bool) {
	if t.Cur.At < 0 || t.Cur.At >= len(t.Rows) {
		var none R
		return none, false
	}
	return t.Rows[t.Cur.At], true
}

// SelectID moves the selection to the row with that id, if shown.
func (t *Table[R, C]) SelectID(id uint64) {
	for i, r := range t.Rows {
		if t.ID(r) == id {
			t.Cur.At, t.chosen = i, true
		}
	}
	t.Cur.clamp(len(t.Rows), t.window())
}

// Update moves the selection; it reports whether the key was the table's.
func (t *Table[R, C]) Update(msg tea.KeyMsg) bool {
	k, page := &t.Keys, max(1, t.window())
	switch {
	case key.Matches(msg, k.Up):
		t.Cur.At--
	case key.Matches(msg, k.Down):
		t.Cur.At++
	case key.Matches(msg, k.PageUp):
		t.Cur.At -= page
	case key.Matches(msg, k.PageDown):
		t.Cur.At += page
	case key.Matches(msg, k.Top):
		t.Cur.At = 0
	case key.Matches(msg, k.Bottom):
		t.Cur.At = len(t.Rows) - 1
	default:
		return false
	}
	t.Cur.clamp(len(t.Rows), t.window())
	t.chosen = true
	return true
}

// Enable turns the keys on while there are rows to move through.
func (t *Table[R, C]) Enable(on bool) {
	for _, b := range t.Keys.all() {
		b.SetEnabled(on && len(t.Rows) > 1)
	}
}

func (t *Table[R, C]) ShortHelp() []key.Binding { return nil }

func (t *Table[R, C]) FullHelp() [][]key.Binding {
	k := t.Keys
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}}
}

// View draws the header and the rows that fit, as lines of the table's width.
func (t *Table[R, C]) View(now time.Time) []string {
	out := []string{t.head}
	if len(t.Rows) == 0 {
		return append(out, t.Shared.Styles.Faint.Render(Cut(t.Empty, t.Width)))
	}
	end := min(len(t.Rows), t.Cur.offset+t.window())
	for i := t.Cur.offset; i < end; i++ {
		k := drawnRow[C]{cells: t.Cells(t.Rows[i], now, t.Cols), selected: i == t.Cur.At}
		line, ok := t.drawn[k]
		if !ok {
			line = t.Draw(k.cells, k.selected, t.Cols)
		}
		t.spare[k] = line
		out = append(out, line)
	}
	// Keep only this frame's lines, reusing both maps' room.
	t.drawn, t.spare = t.spare, t.drawn
	clear(t.spare)
	if hidden := len(t.Rows) - (end - t.Cur.offset); hidden > 0 {
		out = append(out, t.Shared.Styles.Faint.Render(Cut(fmt.Sprintf("  +%d more", hidden), t.Width)))
	}
	return out
}

// window is how many rows are shown at once: the lines under the header,
// less one for the count of the rows left out when they do not all fit.
func (t *Table[R, C]) window() int {
	if len(t.Rows) <= t.Height-1 {
		return t.Height - 1
	}
	return max(1, t.Height-2)
}
