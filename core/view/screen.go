package view

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// FitScreen is text drawn from the top left of a width×height screen: each
// line cut to the width and cleared to its end, lines past the height
// left out, and the rest of the screen cleared.
func FitScreen(text string, width, height int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	var b strings.Builder
	b.WriteString(ansi.CursorHomePosition)
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(ansi.Truncate(l, width, ""))
		b.WriteString(ansi.EraseLineRight)
	}
	b.WriteString(ansi.EraseScreenBelow)
	return b.String()
}
