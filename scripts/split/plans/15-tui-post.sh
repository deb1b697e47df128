#!/bin/sh
# Issue 20, step twelve, after plans/15-tui.txt: the commands' printers
# (text.go, show.go, report.go and their tests) are as they were — what
# they use of the moved parts is forwarded by tui/printers.go, beside
# endedAt, until they leave tui; small files the move left are joined to
# their neighbours; the moved tests have their own instant (t0) and key;
# a package comment for each new package.
set -e
export PATH=/tmp/tools:$PATH
# The printers are another step's (plans/14-printers): as they were, where
# they still are in tui.
for f in tui/text.go tui/show.go tui/report.go tui/text_test.go tui/printable_test.go; do
	if git cat-file -e HEAD:"$f" 2>/dev/null; then git checkout HEAD -- "$f"; fi
done
if [ -f tui/text.go ]; then
	rm tui/bookings.go
	cat > tui/printers.go <<'GO'
package tui

import (
	"time"

	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/tui/tabs"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// What the commands' printers (text.go, show.go, report.go) use of the
// app's parts, which have packages of their own: they call them here by
// the names they had. The printers leave tui for core/view (issue 20),
// and these go with them.

// endedAt is when a booking stopped holding its share.
func endedAt(p domain.Partition) time.Time { return p.End() }

// reading is widget.Reading.
func reading[N int | float64](v N, format string) string { return widget.Reading(v, format) }

// orDash is widget.OrDash.
func orDash(s string) string { return widget.OrDash(s) }

// barCells is widget.BarCells.
func barCells(frac float64, width int) int { return widget.BarCells(frac, width) }

// verdictText is tabs.VerdictText.
func verdictText(a admission.Attribution) string { return tabs.VerdictText(a) }
GO
elif [ -f tui/bookings.go ]; then
	# The printers have left: endedAt is the refresh's alone.
	python3 scripts/split/merge.py tui/refresh.go tui/bookings.go
fi
git mv -f tui/widget/app.go tui/widget/shared.go 2>/dev/null || mv tui/widget/app.go tui/widget/shared.go
mv tui/widget/view.go tui/widget/memo.go
python3 scripts/split/merge.py tui/widget/cells.go tui/widget/bookings.go tui/widget/hosts.go
python3 scripts/split/merge.py tui/tabs/tabs.go tui/tabs/app.go
python3 scripts/split/merge.py tui/history/history.go tui/history/cmds.go
mv tui/gpus/bars.go tui/gpus/memorybar.go
mv tui/gpus/bars_test.go tui/gpus/memorybar_test.go
python3 - <<'PY'
import re

def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

# The moved tests' instant and key, their own.
for f, helpers in [('tui/widget/table_test.go', ['t0', 'keyMsg']), ('tui/gpus/memorybar_test.go', ['t0']),
                   ('tui/history/history_test.go', ['t0'])]:
    s = open(f).read()
    for h in helpers:
        s = s.replace('tui.' + h, h)
    s = s.replace('\t"github.com/chronos-gpu/chronos/tui"\n', '')
    open(f, 'w').write(s)
t0 = '''// t0 is when every test happens.
var t0 = time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)
'''
for pkg, extra in [('widget', '''
// keyMsg is one key as the terminal sends it: typed text.
func keyMsg(k string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)} }
'''), ('gpus', ''), ('history', '')]:
    imports = 'import "time"\n'
    if extra:
        imports = 'import (\n\t"time"\n\n\ttea "github.com/charmbracelet/bubbletea"\n)\n'
    open('tui/%s/helpers_test.go' % pkg, 'w').write('package %s\n\n%s\n%s%s' % (pkg, imports, t0, extra))

docs = {
    'tui/widget/shared.go': '''// Package widget is what every part of the app draws with: the context
// they share by pointer (styles, clock, who is looking), the styles, text
// measured in terminal cells, bars and the app's own traces of each GPU,
// the generic table with its columns and selection, the prompt on the
// status line and the text input of every field, and the memo that keeps
// a drawn part until what it shows changes. It knows no tab, no panel and
// no form: they are built on it.
''',
    'tui/tabs/tabs.go': '''// Package tabs is the tables of the app's lower half: the bookings with
// their countdowns, the GPU processes and what each counts against, and
// the waiting line. Each is a table of its own rows, shaped by a pure
// function from the readings (what the app last read from the ledger and
// the GPUs) and the person's filter and sort order; the app hands every
// tab the readings, its size and its keys.
''',
    'tui/gpus/gpus.go': '''// Package gpus is the app's GPU panel: each of this host's GPUs with its
// load, a sparkline of the app's own readings and a memory bar of who
// booked and who uses what, and under them the other hosts of a ledger
// many hosts share.
''',
    'tui/history/history.go': '''// Package history is the app's view of one GPU's last hour, which takes
// the screen: utilisation and memory as graphs, and each booking's span
// with its idle stretches, from what monitors recorded in the ledger and
// the app's own finer readings.
''',
    'tui/form/form.go': '''// Package form is the app's booking form: the GPU (or several, or any),
// memory, duration, start and, for root, whom for; mistakes are explained
// beside it and a request that would fit later is offered a place in line.
''',
}
for path, doc in docs.items():
    name = path.split('/')[1]
    sub(path, 'package %s\n' % name, doc + 'package %s\n' % name)

# Comments that named the parts where they were.
sub('tui/app.go', '''// The app is a root Model that composes components, each a file of its own:
// the GPU panel (gpus.go), one tab per table (bookings.go, processes.go, both
// on the table component in table.go), the booking form (form.go), the
// prompt on the status line (prompt.go) and a GPU's history, which takes
// the screen (history.go).''', '''// The app is a root Model that composes components, each a package of its
// own: the GPU panel (tui/gpus), one tab per table (tui/tabs: bookings,
// processes and the line, on the table in tui/widget), the booking form
// (tui/form), the prompt on the status line (tui/widget) and a GPU's
// history, which takes the screen (tui/history).''')
# gofmt does not reflow comments: the rest of the paragraph, by hand.
sub('tui/app.go', '''// history, which takes the screen (tui/history). The person's notices stay on a line under the
// header until dismissed. Every component draws from what the root hands
// it, keeps its own keys (a help.KeyMap) and is sized by the root. All
// reading and writing happens in tea.Cmds (cmds.go).''', '''// history, which takes the screen (tui/history); what they all draw with
// (styles, cells, bars, the table) is in tui/widget. The person's notices
// stay on a line under the header until dismissed. Every component draws
// from what the root hands it, keeps its own keys (a help.KeyMap) and is
// sized by the root. All reading and writing happens in tea.Cmds
// (cmds.go).''')
# The tab interface's comments name its methods as they are now.
t = 'tui/tabs.go'
sub(t, '''// every tab each new reading and the person's filters (setRows), its size
// (setSize), and the keys it does not take itself (update); it shows the''', '''// every tab each new reading and the person's filters (SetRows), its size
// (SetSize), and the keys it does not take itself (Update); it shows the''')
sub(t, '(see bookingsTab)', '(see tabs.Bookings)')
for w in ['title names', 'update takes', 'enable turns', 'device is', 'sortKeys are']:
    sub(t, '// ' + w, '// ' + w[0].upper() + w[1:])
# Bookings.Device's comment was above SortKeys.
sub('tui/tabs/bookings.go', '''// device is the selected booking's GPU when it is one of this host's: the
// app reads only this host's GPUs.
func (t *Bookings) SortKeys() []SortKey { return bookingSorts }

func (t *Bookings) Device() (int, bool) {''', '''func (t *Bookings) SortKeys() []SortKey { return bookingSorts }

// Device is the selected booking's GPU when it is one of this host's: the
// app reads only this host's GPUs.
func (t *Bookings) Device() (int, bool) {''')
sub('tui/widget/memo.go', '''func (c *Memo) Draw(''', '''// Draw is what draw made, drawn again only when from is not what it was
// drawn from.
func (c *Memo) Draw(''')
PY
gofmt -w tui/*.go tui/*/*.go
goimports -local github.com/chronos-gpu/chronos -w tui/*.go tui/*/*.go
# Comments that named fields and constants by the names they had.
python3 - <<'PY'
def sub(path, old, new):
    s = open(path).read()
    assert s.count(old) == 1, (path, old)
    open(path, 'w').write(s.replace(old, new))

f = 'tui/form/form.go'
sub(f, '(see offerWait)', '(see Failed and Update)')
sub(f, '// index into devices; len(devices): any GPU', '// index into Devices; len(Devices): any GPU')
sub(f, '''	// marked are the GPUs (by index) of a booking of several, chosen with
	// space; none: the one under the cursor. count is how many GPUs "any"
	// asks for.''', '''	// Marked are the GPUs (by index) of a booking of several, chosen with
	// space; none: the one under the cursor. Count is how many GPUs "any"
	// asks for.''')
sub(f, '// fieldFor+1 for root', '// FieldFor+1 for root')
sub(f, '	// later is the ledger', '	// Later is the ledger')
sub('tui/widget/prompt.go', "// other: a yes-or-no question's third answer, offered with offer.", "// Other: a yes-or-no question's third answer, offered with Offer.")
sub('tui/widget/styles.go', '	// plain: no colour', '	// Plain: no colour')
sub('tui/cmds.go', 'go through shared.after.', 'go through widget.Shared.After.')
sub('tui/widget/styles.go', '(see plain)', '(see Plain)')
sub('tui/tabs/queue.go', '(see Model.load)', "(see the app's Model.load)")
PY
# The depguard rules: tui/widget below the parts, the parts beside each other
# below the app; the app's and the signal rule's files take in its packages.
python3 - <<'PY'
p = '.golangci.yaml'
s = open(p).read()
old = '''          files: ["**/core/*.go", "**/core/**/*.go", "**/storage/*.go", "**/storage/**/*.go", "**/gpu/*.go", "**/gpu/**/*.go", "**/tui/*.go", "!**/core/servicetest/*.go", "!$test"]'''
assert s.count(old) == 1, 'signals'
s = s.replace(old, old.replace('"**/tui/*.go", ', '"**/tui/*.go", "**/tui/**/*.go", '))
old = '''        app:
          files: ["**/tui/*.go", "!$test"]'''
assert s.count(old) == 1, 'app'
parts = ['tabs', 'gpus', 'history', 'form']
rule = '''        widget:
          # What every part of the app draws with (styles, cells, bars, the
          # table, the prompt): below the parts built on it and the app; it
          # draws what it is handed and reads nothing itself.
          files: ["**/tui/widget/*.go", "!$test"]
          deny:
            - pkg: github.com/chronos-gpu/chronos/tui$
              desc: the app's building blocks are below the app
            - pkg: github.com/chronos-gpu/chronos/tui/
              desc: the app's building blocks are below its parts, which use them
            - pkg: github.com/chronos-gpu/chronos/core$
              desc: the app's building blocks draw what they are handed; they call no service
            - pkg: github.com/chronos-gpu/chronos/storage
              desc: the app's building blocks draw what they are handed; they read no ledger
            - pkg: github.com/chronos-gpu/chronos/gpu
              desc: the app's building blocks draw what they are handed; they read no GPU
        parts:
          # The app's parts (the tabs, the GPU panel, a GPU's history, the
          # booking form): beside each other, above tui/widget, below the
          # app that composes them. They draw what the app read: every
          # read and write is the app's, in tui/cmds.go.
          files: [%s, "!$test"]
          deny:
            - pkg: github.com/chronos-gpu/chronos/tui$
              desc: the app's parts are below the app, which composes them
''' % ', '.join('"**/tui/%s/*.go"' % d for d in parts)
for d in parts:
    rule += '''            - pkg: github.com/chronos-gpu/chronos/tui/%s
              desc: the app's parts are beside each other; what they share is in tui/widget
''' % d
rule += '''            - pkg: github.com/chronos-gpu/chronos/storage
              desc: the app's parts draw what the app read; the app reads the ledger (tui/cmds.go)
'''
s = s.replace(old, rule + '''        app:
          files: ["**/tui/*.go", "**/tui/**/*.go", "!$test"]''')
open(p, 'w').write(s)
PY
