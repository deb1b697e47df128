#!/bin/sh
# Issue 20, step sixteen, before plans/18-messages.txt: what the split
# tool cannot do. "did you mean"'s choice of the nearest names leaves
# nearFlags (which only gathers the flags' names) for nearest, which the
# plan moves to core/human beside the edit distance. The shell function
# the bash completion script falls back on is a shell file of its own in
# contrib/, embedded byte for byte.
set -e
export PATH=/tmp/tools:$PATH
python3 - <<'PY'
import re
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

p = 'messages.go'
s = open(p).read()
start = s.index('func nearFlags(cmd *cobra.Command, typed string) []string {')
end = s.index('\n}\n', start) + 3
s = s[:start] + '''func nearFlags(cmd *cobra.Command, typed string) []string {
	var names []string
	seen := map[string]bool{}
	look := func(f *pflag.Flag) {
		if !f.Hidden && !seen[f.Name] {
			seen[f.Name] = true
			names = append(names, f.Name)
		}
	}
	cmd.Flags().VisitAll(look)
	cmd.InheritedFlags().VisitAll(look)
	near := nearest(typed, names)
	for i, n := range near {
		near[i] = "--" + n
	}
	return near
}

// nearest is up to three of names within two edits of typed (or that it
// begins), the nearest first: the names "did you mean" offers.
func nearest(typed string, names []string) []string {
	if typed == "" || len(typed) > human.MaxSuggested {
		return nil
	}
	type near struct {
		name string
		d    int
	}
	var found []near
	for _, name := range names {
		d := human.EditDistance(typed, name)
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
''' + s[end:]
open(p, 'w').write(s)

sub(p, 'return hintedError{err, "', 'return hintedError{err: err, hint: "')

c = 'completion.go'
s = open(c).read()
m = re.search(r'const bashWithoutBashCompletion = `(.*?)`\n', s, re.S)
open('contrib/bash-completion-fallback.bash', 'w').write(m.group(1))
s = s[:m.start()] + '//go:embed contrib/bash-completion-fallback.bash\nvar bashWithoutBashCompletion string\n' + s[m.end():]
s = s.replace('import (\n', 'import (\n\t_ "embed"\n', 1)
open(c, 'w').write(s)
PY
goimports -local github.com/chronos-gpu/chronos -w messages.go completion.go
