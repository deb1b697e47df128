package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// column is one column of a table: its title, its width in cells and
// whether its text sits to the right. A flexible column takes what the
// others leave, up to max cells (0: no limit), and is left out when fewer
// than min remain.
type column struct {
	title string
	width int
	right bool
	flex  bool
	min   int
	max   int
}

// markWidth is the first column of every table: the selection marker and
// what else marks a row, with no gap after it.
const markWidth = 2

// columns are a table's columns laid out at one width.
type columns struct {
	specs  []column
	widths []int // 0 for a column left out
}

// layoutColumns gives each column its width in width cells; columns are
// separated by one space, the first (the marker) by none.
func layoutColumns(specs []column, width int) columns {
	c := columns{specs: specs, widths: make([]int, len(specs))}
	fixed, flex := 0, -1
	for i, s := range specs {
		if s.flex {
			flex = i
			continue
		}
		c.widths[i] = s.width
		fixed += s.width
		if i > 1 && s.width > 0 {
			fixed++ // the space before it
		}
	}
	if flex >= 0 {
		w := width - fixed - 1
		if s := specs[flex]; s.max > 0 {
			w = min(w, s.max)
		}
		if w >= specs[flex].min && w > 0 {
			c.widths[flex] = w
		}
	}
	return c
}

// columnsWidth is the cells a line of specs takes with each flexible
// column at its least: more than the width, and the line is cut.
func columnsWidth(specs []column) int {
	w := 0
	for i, s := range specs {
		cw := s.width
		if s.flex {
			cw = s.min
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

// cell is text padded or cut to column i's width, on the column's side.
func (c columns) cell(i int, text string) string {
	if c.specs[i].right {
		return padLeft(text, c.widths[i])
	}
	return fit(text, c.widths[i])
}

// join puts cells (one per column, already padded) on one line, leaving
// out the columns that did not fit.
func (c columns) join(cells ...string) string {
	var b strings.Builder
	for i, s := range cells {
		if c.widths[i] == 0 {
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
func (c columns) header() string {
	cells := make([]string, len(c.specs))
	for i, s := range c.specs {
		cells[i] = c.cell(i, s.title)
	}
	return c.join(cells...)
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

// table is a list of rows on screen: a header from its columns, the window
// of rows that follows the selection, and the keys that move it. What a row
// shows comes from its tab in two steps: cells, a comparable value of
// everything the row shows now (its texts and flags), and draw, which makes
// the line from the cells alone. A row whose cells are what they were last
// frame is not drawn again: most frames only a countdown or two changed.
type table[R any, C comparable] struct {
	sh    *shared
	keys  tableKeys
	specs []column
	rows  []R
	id    func(R) uint64
	cells func(r R, now time.Time, cols columns) C
	draw  func(c C, selected bool, cols columns) string
	empty string // what an empty table says

	cur    selection
	chosen bool // the selection was moved to a row, by a key or the app
	width  int
	height int // lines, the header's included
	cols   columns
	head   string
	drawn  map[drawnRow[C]]string // last frame's lines
	spare  map[drawnRow[C]]string
}

// drawnRow is what one drawn line depended on.
type drawnRow[C comparable] struct {
	cells    C
	selected bool
}

func (t *table[R, C]) init(sh *shared, specs []column, empty string) {
	t.sh, t.keys, t.specs, t.empty = sh, defaultTableKeys(), specs, empty
	t.drawn, t.spare = map[drawnRow[C]]string{}, map[drawnRow[C]]string{}
	t.setSize(80, 10)
}

func (t *table[R, C]) setSize(width, height int) {
	if width != t.width {
		t.width = width
		t.layout()
	}
	t.height = height
	t.cur.clamp(len(t.rows), t.window())
}

// setColumns changes the columns, say to show one only while it has
// something to say.
func (t *table[R, C]) setColumns(specs []column) {
	if !slices.Equal(specs, t.specs) {
		t.specs = specs
		t.layout()
	}
}

// layout sizes the columns to the width; lines drawn for other widths go.
func (t *table[R, C]) layout() {
	t.cols = layoutColumns(t.specs, t.width)
	t.head = t.sh.styles.TableHeader.Render(cut(t.cols.header(), t.width))
	clear(t.drawn)
}

// setRows shows new rows. A selection moved to a row stays on that row
// (by id) while it is there; one never moved stays on the first row.
func (t *table[R, C]) setRows(rows []R) {
	sel, had := t.selected()
	t.rows = rows
	if had && t.chosen {
		t.selectID(t.id(sel))
	}
	t.cur.clamp(len(t.rows), t.window())
}

func (t *table[R, C]) selected() (R, bool) {
	if t.cur.at < 0 || t.cur.at >= len(t.rows) {
		var none R
		return none, false
	}
	return t.rows[t.cur.at], true
}

// selectID moves the selection to the row with that id, if shown.
func (t *table[R, C]) selectID(id uint64) {
	for i, r := range t.rows {
		if t.id(r) == id {
			t.cur.at, t.chosen = i, true
		}
	}
	t.cur.clamp(len(t.rows), t.window())
}

// update moves the selection; it reports whether the key was the table's.
func (t *table[R, C]) update(msg tea.KeyMsg) bool {
	k, page := &t.keys, max(1, t.window())
	switch {
	case key.Matches(msg, k.Up):
		t.cur.at--
	case key.Matches(msg, k.Down):
		t.cur.at++
	case key.Matches(msg, k.PageUp):
		t.cur.at -= page
	case key.Matches(msg, k.PageDown):
		t.cur.at += page
	case key.Matches(msg, k.Top):
		t.cur.at = 0
	case key.Matches(msg, k.Bottom):
		t.cur.at = len(t.rows) - 1
	default:
		return false
	}
	t.cur.clamp(len(t.rows), t.window())
	t.chosen = true
	return true
}

// enable turns the keys on while there are rows to move through.
func (t *table[R, C]) enable(on bool) {
	for _, b := range t.keys.all() {
		b.SetEnabled(on && len(t.rows) > 1)
	}
}

func (t *table[R, C]) ShortHelp() []key.Binding { return nil }

func (t *table[R, C]) FullHelp() [][]key.Binding {
	k := t.keys
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}}
}

// view draws the header and the rows that fit, as lines of the table's width.
func (t *table[R, C]) view(now time.Time) []string {
	out := []string{t.head}
	if len(t.rows) == 0 {
		return append(out, t.sh.styles.Faint.Render(cut(t.empty, t.width)))
	}
	end := min(len(t.rows), t.cur.offset+t.window())
	for i := t.cur.offset; i < end; i++ {
		k := drawnRow[C]{cells: t.cells(t.rows[i], now, t.cols), selected: i == t.cur.at}
		line, ok := t.drawn[k]
		if !ok {
			line = t.draw(k.cells, k.selected, t.cols)
		}
		t.spare[k] = line
		out = append(out, line)
	}
	// Keep only this frame's lines, reusing both maps' room.
	t.drawn, t.spare = t.spare, t.drawn
	clear(t.spare)
	if hidden := len(t.rows) - (end - t.cur.offset); hidden > 0 {
		out = append(out, t.sh.styles.Faint.Render(cut(fmt.Sprintf("  +%d more", hidden), t.width)))
	}
	return out
}

// window is how many rows are shown at once: the lines under the header,
// less one for the count of the rows left out when they do not all fit.
func (t *table[R, C]) window() int {
	if len(t.rows) <= t.height-1 {
		return t.height - 1
	}
	return max(1, t.height-2)
}
