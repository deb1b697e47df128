#!/bin/sh
# Issue 20, step twelve, before plans/14-printers.txt: what the split tool
# cannot do. tui's Printable wraps human.Printable: it becomes a var the
# plan unaliases, so every use names human.Printable. The printers used
# five of the app's helpers (tui/cells.go, processes.go, bookings.go,
# bars.go), which stay with the app: the printers read a booking's end
# from the record (what endedAt did), write "-" for nothing with cmp.Or
# (orDash), and have their own reading of a figure the driver may not
# give (reading), their own bar length (barCells) and their own words for
# what a process counts against (verdictText, exported as view.Verdict
# for the app to use once the app's own split has landed). The printers'
# half of tui/printable_test.go's hostile-text test goes to the printers'
# tests with the text put straight into a booking and a reading; the
# hostile text and the check that none of it reaches a terminal go to
# core/coretest, which both use.
set -e
export PATH=/tmp/tools:$PATH
python3 - <<'PY'
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

sub('tui/text.go', '''// Printable is core.Printable: every string another user controls passes
// through it before it reaches a terminal.
func Printable(s string) string { return human.Printable(s) }
''', '''// Printable is human.Printable.
var Printable = human.Printable
''')
sub('tui/text.go', 'endedAt(p.Partition)', 'p.End()')
sub('tui/show.go', 'endedAt(p.Partition)', 'p.End()')
sub('tui/text.go', 'orDash(p.DeviceUUID)', 'cmp.Or(p.DeviceUUID, "-")')
sub('tui/show.go', 'orDash(p.DeviceUUID)', 'cmp.Or(p.DeviceUUID, "-")')
sub('tui/text.go', 'orDash(Printable(a.User))', 'cmp.Or(Printable(a.User), "-")')
sub('tui/text.go', 'orDash(Printable(a.Container.Label()))', 'cmp.Or(Printable(a.Container.Label()), "-")')
sub('tui/text.go', 'reading(', 'figureOf(', 0)
sub('tui/text.go', 'verdictText(a)', 'verdictOf(a)')
sub('tui/text.go', '''func migLabel(''', '''// figureOf is a reading in format, or "n/a" where the hardware or the
// driver gives none (a negative figure).
func figureOf[N int | float64](v N, format string) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf(format, v)
}

// verdictOf says what a process counts against, in the words both the
// app and `chronos stats` show: "#7", "OVER BUDGET #7", "ENDED #7",
// "UNBOOKED", "FALSE CLAIM #7" for an unbooked process whose environment
// names someone else's booking, or "MPS SERVER".
func verdictOf(a admission.Attribution) string {
	switch a.Verdict {
	case admission.Unbooked:
		if a.Claimed != 0 {
			return fmt.Sprintf("FALSE CLAIM #%d", a.Claimed)
		}
		return "UNBOOKED"
	case admission.OverBudget:
		return fmt.Sprintf("OVER BUDGET #%d", a.Partition)
	case admission.Ended:
		return fmt.Sprintf("ENDED #%d", a.Partition)
	case admission.MPSServer:
		return "MPS SERVER"
	}
	return fmt.Sprintf("#%d", a.Partition)
}

func migLabel(''')
sub('tui/report.go', 'barCells(', 'cellsOf(', 0)
sub('tui/report.go', '// gpuHours prints', '''// cellsOf is how many of width cells a bar of frac (0..1) fills.
func cellsOf(frac float64, width int) int {
	return max(0, min(width, int(frac*float64(width)+0.5)))
}

// gpuHours prints''')

src = 'tui/printable_test.go'
s = open(src).read()
helpers = s[s.index('// hostile is text another user controls'):s.index('// A process whose command line')]
s = s.replace(helpers, '')
s = s.replace('noTerminalControl(t, ', 'coretest.NoTerminalControl(t, ').replace(', hostile)', ', coretest.Hostile)').replace('" + hostile\n', '" + coretest.Hostile\n')
printers = s[s.index('\tvar list bytes.Buffer\n'):s.index('}\n\n// A booking on a GPU the machine')]
s = s.replace(printers, '')
s = s.replace('\tp := w.book(mallory, ', '\tw.book(mallory, ', 1)
sub_old = '''// A process whose command line and a user whose name hold escape sequences
// reach the app, `list` and `stats` only as visible text.'''
assert sub_old in s
s = s.replace(sub_old, '''// A process whose command line and a user whose name hold escape sequences
// reach the app only as visible text (core/view's tests check list and
// stats).''')
s = s.replace('import (\n', 'import (\n\t"github.com/chronos-gpu/chronos/core/coretest"\n', 1)
open(src, 'w').write(s)
helpers = helpers.replace('// hostile is', '// Hostile is').replace('const hostile', 'const Hostile')
helpers = helpers.replace('// noTerminalControl fails', '// NoTerminalControl fails').replace('func noTerminalControl(', 'func NoTerminalControl(')
dst = 'core/coretest/procs.go'
d = open(dst).read()
open(dst, 'w').write(d.rstrip('\n') + '\n\n' + helpers.rstrip('\n') + '\n')

tt = 'tui/text_test.go'
s = open(tt).read()
s = s.replace('Time: t0,', 'Time: time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC),')
s = s.rstrip('\n') + r'''

// A user whose name and a process whose command line hold escape sequences
// reach `list` and `stats` only as visible text.
func TestAnotherUsersTextReachesTheTablesEscaped(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)
	p := core.Partition{Partition: domain.Partition{ID: 1, User: "mal\x1b[2Jlory", Device: 0, SharePPM: 200_000,
		Bytes: 16 << 30, State: domain.Live, Created: now.Add(-time.Minute), Start: now.Add(-time.Minute), Expires: now.Add(time.Hour)}}
	var list bytes.Buffer
	require.NoError(t, WriteBookings(&list, []core.Partition{p}, now, time.Minute, TableOptions{Wide: true}))
	coretest.NoTerminalControl(t, list.String())
	require.Contains(t, list.String(), `mal\x1b[2Jlory`)

	dev := gpu.DeviceSample{Device: gpu.Device{Index: 0, Name: "GPU", MemoryTotal: 80 << 30}, Util: 3, MemUtil: 1, TempC: 40, PowerW: 70}
	proc := admission.Attribution{Process: gpu.Process{PID: 7, User: "mallory", Command: "sh -c sleep " + coretest.Hostile,
		MemoryUsed: 1 << 30, SM: procfs.NA}, Device: 0, Verdict: admission.Unbooked}
	var stats bytes.Buffer
	require.NoError(t, WriteStats(&stats, core.Stats{Sample: gpu.Sample{Time: now, Backend: "sim", Devices: []gpu.DeviceSample{dev}},
		Processes: []admission.Attribution{proc}}))
	coretest.NoTerminalControl(t, stats.String())
	require.Contains(t, stats.String(), `\x1b]2;pwned\x07\x1b[2J\x9b2J\u009b2J`)
}
'''
s = s.replace('import (\n', 'import (\n\t"time"\n\t"github.com/chronos-gpu/chronos/core/coretest"\n\t"github.com/chronos-gpu/chronos/core/domain"\n', 1)
open(tt, 'w').write(s)
PY
goimports -local github.com/chronos-gpu/chronos -w tui/text.go tui/show.go tui/report.go tui/printable_test.go tui/text_test.go core/coretest/procs.go
