package widget

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"
)

// Widths are terminal cells, not bytes: "█" is three bytes, "田" two cells.
func TestPaddingCountsCells(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text  string
		width int
		want  string
	}{
		{"█", 3, "  █"},
		{"田中", 6, "  田中"},
		{"12.3 GiB", 9, " 12.3 GiB"},
		{"123456", 4, "123…"},
	} {
		require.Equal(t, tc.want, PadLeft(tc.text, tc.width), "%q in %d", tc.text, tc.width)
		require.Equal(t, tc.width, ansi.StringWidth(PadLeft(tc.text, tc.width)))
		require.Equal(t, tc.width, ansi.StringWidth(Fit(tc.text, tc.width)))
	}
}
