#!/bin/sh
# Issue 20, step fifteen, after plans/17-watch.txt: the moved code joins
# the files of its kind.
set -e
export PATH=/tmp/tools:$PATH
python3 scripts/split/merge.py core/view/screen.go core/view/watch.go core/view/cmd_app.go
python3 scripts/split/merge.py core/view/show.go core/view/cmd_show.go
mv core/view/completion.go core/view/describe.go
mv core/migrate/cmd_migrate.go core/migrate/print.go
python3 - core/view/screen.go core/view/show.go <<'FIX'
# merge.py appends imports; put them back in goimports' three groups.
import re, sys
for path in sys.argv[1:]:
    s = open(path).read()
    m = re.search(r'^import \((.*?)\n\)', s, re.M | re.S)
    lines = [l.strip() for l in m.group(1).splitlines() if l.strip()]
    def path_of(l): return l.split('"')[1]
    std = sorted({l for l in lines if '.' not in path_of(l).split('/')[0]}, key=path_of)
    own = sorted({l for l in lines if path_of(l).startswith('github.com/chronos-gpu/chronos')}, key=path_of)
    other = sorted({l for l in lines if l not in std and l not in own}, key=path_of)
    groups = ['\n'.join('\t' + l for l in g) for g in (std, other, own) if g]
    s = s[:m.start()] + 'import (\n' + '\n\n'.join(groups) + '\n)' + s[m.end():]
    open(path, 'w').write(s)
FIX
goimports -local github.com/chronos-gpu/chronos -w core/view/screen.go core/view/show.go
