#!/bin/sh
# Issue 20, step seven, after plans/10-report.txt: the moved tests use
# core/servicetest's client helpers (ClientAt, NewClient, ClientOn, Half)
# in place of core's internal ones; the usage test's file is named for
# it; a package comment; the comments that named the old calls.
set -e
export PATH=/tmp/tools:$PATH
mv core/report/fair_test.go core/report/usage_test.go
python3 - <<'PY'
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

for f in ['core/report/report_test.go', 'core/report/bench_test.go']:
    sub(f, 'core.clientAt(', 'servicetest.ClientAt(', 0)
sub('core/report/report_test.go', 'core.newTestClient(', 'servicetest.NewClient(', 0)
sub('core/report/usage_test.go', '''	l := core.newLedger(open)
	a, r := l.as(coretest.Alice), l.as(coretest.Root)
''', '''	clk := coretest.NewFakeClock()
	a, r := servicetest.ClientOn(open(), clk, coretest.Alice), servicetest.ClientOn(open(), clk, coretest.Root)
''')
sub('core/report/usage_test.go', 'l.clock.', 'clk.', 0)
sub('core/report/usage_test.go', 'core.half(', 'servicetest.Half(', 0)

sub('core/report/report.go', 'package report\n', '''// Package report is what the ledger's records add up to: GPU use by user,
// group or GPU (chronos report), each user's use and what their quotas
// leave (chronos usage), one GPU's recent history (the app's history
// view), and every user's totals since the ledger began (metrics). It
// reads through a client, above core.
package report
''')
sub('core/report/results.go', '(see Client.Report)', '(see Read)')
sub('core/metrics/metrics.go', '(core.SnapshotOf)', '(snapshot)')
sub('core/metrics/snapshot.go', 'reads a LedgerSnapshot', 'reads a ledgerSnapshot')
PY
goimports -local github.com/chronos-gpu/chronos -w core/report/*_test.go
# Its depguard rule, before the views' rule in .golangci.yaml.
python3 - <<'PY2'
p = '.golangci.yaml'
s = open(p).read()
anchor = '''        view:
          # The JSON views'''
assert anchor in s
rule = '''        report:
          # What the records add up to, read through a client: above the
          # service, beside the monitor, supervisor and keeper; metrics,
          # the app and the command layer use it.
          files: ["**/core/report/*.go", "!$test"]
          deny:
            - pkg: github.com/chronos-gpu/chronos/core/monitor
              desc: reports read through the service, nothing beside or above it
            - pkg: github.com/chronos-gpu/chronos/core/supervisor
              desc: reports read through the service, nothing beside or above it
            - pkg: github.com/chronos-gpu/chronos/core/keeper
              desc: reports read through the service, nothing beside or above it
            - pkg: github.com/chronos-gpu/chronos/core/metrics
              desc: reports read through the service; metrics uses them
            - pkg: github.com/chronos-gpu/chronos/core/view
              desc: reports read through the service, nothing beside or above it
            - pkg: github.com/chronos-gpu/chronos/tui
              desc: reports read through the service, nothing beside or above it
'''
s = s.replace(anchor, rule + anchor, 1)
old = '''            - pkg: github.com/chronos-gpu/chronos/core/view
              desc: the service answers in its own types; the command layer makes its JSON views of them
'''
assert old in s
s = s.replace(old, old + '''            - pkg: github.com/chronos-gpu/chronos/core/report
              desc: the reports read through the service, above it
            - pkg: github.com/chronos-gpu/chronos/core/migrate
              desc: a migration is the command layer's, beside the service
''', 1)
open(p, 'w').write(s)
PY2
