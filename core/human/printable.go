package human

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable returns s with every character that could act on a terminal
// shown escaped instead, as ps and less do: C0 controls (ESC among them),
// DEL, C1 controls (U+0080–U+009F, which some terminals obey as ESC
// sequences), bytes that are not UTF-8 (a lone 0x9b is CSI to others), and
// the marks that reorder or break lines (bidi overrides, line separators).
// Every string another user controls — command lines, user names, event
// details, the names in the ledger — passes through it before it reaches a
// terminal, so it cannot retitle the window, clear the screen or move the
// cursor. JSON output stays exact.
func Printable(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s // plain ASCII: the common case costs no copy
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f, reorders(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// reorders says whether r changes the order or the lines of the text
// around it.
func reorders(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
