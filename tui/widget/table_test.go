package widget

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// numbers is a table of numbers, drawn as they are.
func numbers(rows ...uint64) *Table[uint64, uint64] {
	t := &Table[uint64, uint64]{}
	t.Init(&Shared{Styles: DefaultStyles()}, []Column{{Width: MarkWidth}, {Title: "N", Width: 4, Right: true}}, "none")
	t.ID = func(r uint64) uint64 { return r }
	t.Cells = func(r uint64, _ time.Time, _ Columns) uint64 { return r }
	t.Draw = func(c uint64, selected bool, cols Columns) string {
		mark := "  "
		if selected {
			mark = "▸ "
		}
		return cols.Join(mark, cols.Cell(1, strconv.FormatUint(c, 10)))
	}
	t.SetSize(20, 4)
	t.SetRows(rows)
	return t
}

// A row the person moved to stays selected when the rows change order; a
// table nobody moved in shows its first row selected, whatever came first.
func TestSelectionFollowsTheChosenRow(t *testing.T) {
	t.Parallel()
	tb := numbers(1, 2, 3)
	tb.SetRows([]uint64{3, 1, 2})
	got, _ := tb.Selected()
	require.Equal(t, uint64(3), got, "untouched: the top row")

	tb.Update(keyMsg("j"))
	got, _ = tb.Selected()
	require.Equal(t, uint64(1), got)
	tb.SetRows([]uint64{2, 3, 1})
	got, _ = tb.Selected()
	require.Equal(t, uint64(1), got, "chosen: the same row, now last")
	tb.SetRows([]uint64{2, 3})
	got, _ = tb.Selected()
	require.Equal(t, uint64(3), got, "gone: the nearest place")
}

// Only as many rows as fit are drawn, the window following the selection,
// and a line drawn once is drawn again only when its cells change.
func TestTableScrollsAndRedrawsOnlyChanges(t *testing.T) {
	t.Parallel()
	tb := numbers(1, 2, 3, 4, 5, 6)
	draws := 0
	draw := tb.Draw
	tb.Draw = func(c uint64, selected bool, cols Columns) string { draws++; return draw(c, selected, cols) }

	require.Equal(t, []string{"     N", "▸    1", "     2", "  +4 more"}, tb.View(t0))
	require.Equal(t, 2, draws)
	tb.View(t0)
	require.Equal(t, 2, draws, "nothing changed: nothing drawn")
	tb.Update(keyMsg("G"))
	require.Equal(t, []string{"     N", "     5", "▸    6", "  +4 more"}, tb.View(t0))
	require.Equal(t, 4, draws)
}
