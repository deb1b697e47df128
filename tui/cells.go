package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Text measured in terminal cells, not bytes: "█" is three bytes and one
// cell, a CJK name two cells per character.

// fit cuts s (which may hold styles) to width cells and pads it to exactly
// width, so no line ever wraps.
func fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	w := ansi.StringWidth(s)
	if w > width {
		return ansi.Truncate(s, width, "…")
	}
	return s + strings.Repeat(" ", width-w)
}

// cut truncates s to width cells without padding.
func cut(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "…")
}

// wrap breaks text (plain, unstyled) between words into lines of at most
// width cells, at most n of them: the last kept line is cut with "…" when
// more text is left. A word longer than a line is broken.
func wrap(text string, width, n int) []string {
	if width <= 0 || n <= 0 {
		return nil
	}
	var lines []string
	for _, para := range strings.Split(text, "\n") {
		lines = append(lines, strings.Split(ansi.Wrap(para, width, ""), "\n")...)
	}
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	if len(lines) > n {
		lines = append(lines[:n-1], cut(strings.Join(lines[n-1:], " "), width))
	}
	return lines
}

// frame makes view exactly width × height: lines cut or padded, missing
// lines added, extra ones dropped.
func frame(view string, width, height int) string {
	lines := strings.Split(view, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	var b strings.Builder
	for i := range height {
		if i > 0 {
			b.WriteByte('\n')
		}
		line := ""
		if i < len(lines) {
			line = lines[i]
		}
		b.WriteString(fit(line, width))
	}
	return b.String()
}

// padLeft puts s (which may hold styles) at the right of width cells.
func padLeft(s string, width int) string {
	w := ansi.StringWidth(s)
	if w >= width {
		return cut(s, width)
	}
	return strings.Repeat(" ", width-w) + s
}

// notAvailable is what the app and `chronos stats` show for a reading the
// hardware or driver does not give (procfs.NA, a negative power).
const notAvailable = "n/a"

// reading formats a number the hardware may not give: negative means it
// did not.
func reading[N int | float64](v N, format string) string {
	if v < 0 {
		return notAvailable
	}
	return fmt.Sprintf(format, v)
}

// orDash is s, or "-" when there is none.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
