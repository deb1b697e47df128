#!/bin/sh
# Issue 20, step seven, before plans/10-report.txt: what the split tool
# cannot do. The reports' methods on Client (Report, History, Usage) and
# the metrics' Snapshot become functions of the client (a method cannot
# leave its type's package), named apart from the types they return until
# the plan renames them; their callers call the functions.
set -e
python3 - <<'PY'
import re
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

sub('core/report.go', '// Report sums the ledger', '// ReportOf sums the ledger')
sub('core/report.go', 'func (c *Client) Report(from time.Time, by ReportBy) (Report, error) {',
    'func ReportOf(c *Client, from time.Time, by ReportBy) (Report, error) {')
sub('core/history.go', '// History returns the last window', '// HistoryOf returns the last window')
sub('core/history.go', 'func (c *Client) History(device int, window time.Duration) (GPUHistory, error) {',
    'func HistoryOf(c *Client, device int, window time.Duration) (GPUHistory, error) {')
sub('core/usage.go', '// Usage reports, for everyone', '// UsageOf reports, for everyone')
sub('core/usage.go', 'func (c *Client) Usage() ([]UserUsage, error) {', 'func UsageOf(c *Client) ([]UserUsage, error) {')
sub('core/snapshot.go', '// Snapshot reads a LedgerSnapshot', '// SnapshotOf reads a LedgerSnapshot')
sub('core/snapshot.go', 'func (c *Client) Snapshot(totals *UserTotals) (LedgerSnapshot, error) {',
    'func SnapshotOf(c *Client, totals *UserTotals) (LedgerSnapshot, error) {')

# callers
sub('tui/cmds.go', 'c.History(device, historyWindow)', 'core.HistoryOf(c, device, historyWindow)')
sub('cmd_usage.go', 'c.Usage()', 'core.UsageOf(c)')
sub('cmd_report.go', 'c.Report(from, cut)', 'core.ReportOf(c, from, cut)')
sub('core/metrics/metrics.go', 'l.c.Snapshot(l.totals)', 'core.SnapshotOf(l.c, l.totals)')
sub('core/metrics/metrics.go', '(core.Client.Snapshot)', '(core.SnapshotOf)')
sub('core/metrics/metrics_test.go', 'r.c.Report(', 'core.ReportOf(r.c, ', 0)
sub('core/monitor/idle_test.go', 'r.c.Usage()', 'core.UsageOf(r.c)', 0)
sub('core/monitor/idle_test.go', 'r.c.History(', 'core.HistoryOf(r.c, ', 0)
sub('core/fair_test.go', 'a.Usage()', 'UsageOf(a)', 0)
sub('core/bench_test.go', 'c.Usage()', 'UsageOf(c)', 0)
sub('core/report_test.go', 'clientAt(path, clock, coretest.Root).Report(', 'ReportOf(clientAt(path, clock, coretest.Root), ')
sub('core/report_test.go', 'NewClient(Options{Ledger: store, Clock: c.clock, As: &coretest.Root}).Usage()',
    'UsageOf(NewClient(Options{Ledger: store, Clock: c.clock, As: &coretest.Root}))')
sub('core/report_test.go', 'c.Report(', 'ReportOf(c, ', 0)
PY
