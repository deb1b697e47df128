#!/bin/sh
# Issue 20, step twelve, after plans/14-printers.txt: FormatIdle joins
# FormatIdleFor; view's package comment says it prints tables too; its
# figure helper's comment; the depguard rules: core/view sits above
# core/report now (it prints reports), the app may use it.
set -e
export PATH=/tmp/tools:$PATH
python3 scripts/split/merge.py core/human/idle.go core/human/accounting.go
python3 - <<'PY'
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

sub('core/human/idle.go', '\t"time"\n\n\t"cmp"\n\t"fmt"\n', '\t"cmp"\n\t"fmt"\n\t"time"\n')
sub('core/view/json.go', '''// Package view holds the shapes `--json` prints, in one place, and how
// they are made from the service's answers. Their field names are a
// stable interface for scripts: add fields, never rename or remove them.
// (What a Client call returns as it is, Stats or Report, is core's.)''', '''// Package view is what the commands print, made from the service's
// answers: the shapes `--json` prints, in one place, and the text tables
// and lines (list, stats, show, events, report). The JSON field names are
// a stable interface for scripts: add fields, never rename or remove
// them. (What a Client call returns as it is, Stats or Report, is its
// package's.) The app uses its countdowns.''')
sub('core/view/text.go', '''// reading is a reading in format, or "n/a" where the hardware or the
// driver gives none (a negative figure).''', '''// reading is a figure in format, or "n/a" where the hardware or the
// driver gives none (a negative figure).''')

p = '.golangci.yaml'
sub(p, '''            - pkg: github.com/chronos-gpu/chronos/core/view
              desc: reports read through the service, nothing beside or above it
''', '''            - pkg: github.com/chronos-gpu/chronos/core/view
              desc: reports read through the service; the views print them, above
''')
sub(p, '''          # The JSON views: made from the service's answers, for the
          # command layer (and the app); nothing beside the service.''', '''          # What commands print: the JSON views and the text tables, made
          # from the service's answers and the reports (above core/report),
          # for the command layer and the app; nothing beside the service.''')
PY
goimports -local github.com/chronos-gpu/chronos -w core/human/idle.go
