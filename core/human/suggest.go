package human

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
