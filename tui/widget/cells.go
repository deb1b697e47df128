package widget

import (
	"fmt"
	"strings"

	"time"

	"github.com/charmbracelet/x/ansi"
)

// Text measured in terminal cells, not bytes: "█" is three bytes and one
// cell, a CJK name two cells per character.

// Fit cuts s (which may hold styles) to width cells and pads it to exactly
// width, so no line ever wraps.
func Fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	w := ansi.StringWidth(s)
	if w > width {
		return ansi.Truncate(s, width, "…")
	}
	return s + strings.Repeat(" ", width-w)
}

// Cut truncates s to width cells without padding.
func Cut(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "…")
}

// Wrap breaks text (plain, unstyled) between words into lines of at most
// width cells, at most n of them: the last kept line is cut with "…" when
// more text is left. A word longer than a line is broken.
func Wrap(text string, width, n int) []string {
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
		lines = append(lines[:n-1], Cut(strings.Join(lines[n-1:], " "), width))
	}
	return lines
}

// Frame makes view exactly width × height: lines cut or padded, missing
// lines added, extra ones dropped.
func Frame(view string, width, height int) string {
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
		b.WriteString(Fit(line, width))
	}
	return b.String()
}

// PadLeft puts s (which may hold styles) at the right of width cells.
func PadLeft(s string, width int) string {
	w := ansi.StringWidth(s)
	if w >= width {
		return Cut(s, width)
	}
	return strings.Repeat(" ", width-w) + s
}

// notAvailable is what the app and `chronos stats` show for a reading the
// hardware or driver does not give (procfs.NA, a negative power).
const notAvailable = "n/a"

// Reading formats a number the hardware may not give: negative means it
// did not.
func Reading[N int | float64](v N, format string) string {
	if v < 0 {
		return notAvailable
	}
	return fmt.Sprintf(format, v)
}

// OrDash is s, or "-" when there is none.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// StartClock is when something starts, to the minute, as a row has room
// for: the time on now's day, else the weekday too.
func StartClock(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04")
	}
	return t.Format("Mon 15:04")
}

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
