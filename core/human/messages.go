package human

import (
	"cmp"
	"errors"
	"slices"
	"strings"
)

// Nearest is up to three of names within two edits of typed (or that it
// begins), the nearest first: the names "did you mean" offers.
func Nearest(typed string, names []string) []string {
	if typed == "" || len(typed) > MaxSuggested {
		return nil
	}
	type near struct {
		name string
		d    int
	}
	var found []near
	for _, name := range names {
		d := EditDistance(typed, name)
		if strings.HasPrefix(name, typed) {
			d = min(d, 1)
		}
		if d <= 2 && d < len(name) {
			found = append(found, near{name, d})
		}
	}
	slices.SortStableFunc(found, func(a, b near) int { return cmp.Compare(a.d, b.d) })
	out := make([]string, 0, min(len(found), 3))
	for _, f := range found[:min(len(found), 3)] {
		out = append(out, f.name)
	}
	return out
}

// HintedError is an error with our advice on a line of its own: the
// error's text may carry the ledger's or a user's words, escaped when
// printed, while the line break between them is ours and stays one.
type HintedError struct {
	Err  error
	Hint string
}

func (e HintedError) Error() string { return e.Err.Error() + "\n" + e.Hint }

func (e HintedError) Unwrap() error { return e.Err }

// PrintableError is err's text made safe for a terminal, line by line where the
// lines are ours.
func PrintableError(err error) string {
	var h HintedError
	if errors.As(err, &h) && h.Error() == err.Error() { // nothing wraps it
		return Printable(h.Err.Error()) + "\n" + Printable(h.Hint)
	}
	return Printable(err.Error())
}

// MaxSuggested is the longest typo that gets a "did you mean": no name is
// that long, so nothing longer is within two edits of one, and weighing
// a pasted 100 KB argument against every name took a second.
const MaxSuggested = 64

// Suggest is the names near typed, unless typed is too long to be near any.
func Suggest(typed string, near func(string) []string) []string {
	if len(typed) > MaxSuggested {
		return nil
	}
	return near(typed)
}

// EditDistance is the Levenshtein distance between a and b.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
