package human

// Strings is ss, a domain type's values, as plain strings.
func Strings[S ~string](ss []S) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
