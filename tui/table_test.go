package tui

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// numbers is a table of numbers, drawn as they are.
func numbers(rows ...uint64) *table[uint64, uint64] {
	t := &table[uint64, uint64]{}
	t.init(&shared{styles: DefaultStyles()}, []column{{width: markWidth}, {title: "N", width: 4, right: true}}, "none")
	t.id = func(r uint64) uint64 { return r }
	t.cells = func(r uint64, _ time.Time, _ columns) uint64 { return r }
	t.draw = func(c uint64, selected bool, cols columns) string {
		mark := "  "
		if selected {
			mark = "▸ "
		}
		return cols.join(mark, cols.cell(1, strconv.FormatUint(c, 10)))
	}
	t.setSize(20, 4)
	t.setRows(rows)
	return t
}

// A row the person moved to stays selected when the rows change order; a
// table nobody moved in shows its first row selected, whatever came first.
func TestSelectionFollowsTheChosenRow(t *testing.T) {
	t.Parallel()
	tb := numbers(1, 2, 3)
	tb.setRows([]uint64{3, 1, 2})
	got, _ := tb.selected()
	require.Equal(t, uint64(3), got, "untouched: the top row")

	tb.update(keyMsg("j"))
	got, _ = tb.selected()
	require.Equal(t, uint64(1), got)
	tb.setRows([]uint64{2, 3, 1})
	got, _ = tb.selected()
	require.Equal(t, uint64(1), got, "chosen: the same row, now last")
	tb.setRows([]uint64{2, 3})
	got, _ = tb.selected()
	require.Equal(t, uint64(3), got, "gone: the nearest place")
}

// Only as many rows as fit are drawn, the window following the selection,
// and a line drawn once is drawn again only when its cells change.
func TestTableScrollsAndRedrawsOnlyChanges(t *testing.T) {
	t.Parallel()
	tb := numbers(1, 2, 3, 4, 5, 6)
	draws := 0
	draw := tb.draw
	tb.draw = func(c uint64, selected bool, cols columns) string { draws++; return draw(c, selected, cols) }

	require.Equal(t, []string{"     N", "▸    1", "     2", "  +4 more"}, tb.view(t0))
	require.Equal(t, 2, draws)
	tb.view(t0)
	require.Equal(t, 2, draws, "nothing changed: nothing drawn")
	tb.update(keyMsg("G"))
	require.Equal(t, []string{"     N", "     5", "▸    6", "  +4 more"}, tb.view(t0))
	require.Equal(t, 4, draws)
}
