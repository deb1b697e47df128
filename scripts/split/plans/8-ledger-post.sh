#!/bin/sh
# Issue 20, step five, after plans/8-ledger.txt: core/ledger's small files
# joined by what they hold (the policy, ending and charging a booking, the
# inventory records: ledger.go; the GPUs' readings: readings.go; the
# admission snapshot: books.go), a package comment, and the comments the
# moved names lacked.
set -e
export PATH=/tmp/tools:$PATH
cd core/ledger
python3 ../../scripts/split/merge.py policy.go fairshare.go partitions.go
mv policy.go ledger.go
python3 ../../scripts/split/merge.py physical.go inventory.go
mv physical.go readings.go
mv line.go books.go
python3 - <<'PY'
def sub(path, old, new):
    s = open(path).read()
    assert old in s, (path, old)
    open(path, 'w').write(s.replace(old, new, 1))
sub('ledger.go', 'package ledger\n', '''// Package ledger is what the booking service and the monitor both do to
// the ledger inside a transaction: read the policy in force, end a
// booking and charge its owner, store the GPUs' readings and make their
// inventory record, and read the snapshot admission decides on. It needs
// no client, so the monitor uses it without core making it public.
package ledger
''')
sub('ledger.go', '\nfunc Policy(', '''
// Policy is the policy in force in tx: the stored one with every unset
// setting at its default, or the default policy when none is stored.
func Policy(''')
sub('books.go', '\nfunc Books(', '''
// Books reads what admission decides on, in tx, as of now, for host here:
// every host's inventory, the policy, the live bookings, the line and,
// when the line or a group's cap needs it, the users' usage.
func Books(''')
PY
/tmp/tools/goimports -local github.com/chronos-gpu/chronos -w *.go
gofmt -l . | (! grep .)
cd ../..
# Its depguard rule, before the views' rule in .golangci.yaml.
python3 - <<'PY2'
p = '.golangci.yaml'
s = open(p).read()
anchor = '''        view:
          # The JSON views'''
assert anchor in s
rule = '''        ledger:
          # What the service and the monitor both do inside a transaction:
          # below both, above admission; no client, no engine.
          files: ["**/core/ledger/*.go", "!$test"]
          deny:
            - pkg: github.com/chronos-gpu/chronos/core$
              desc: the ledger's operations are below the service, which imports them
            - pkg: github.com/chronos-gpu/chronos/core/monitor
              desc: the ledger's operations are below the service and the monitor
            - pkg: github.com/chronos-gpu/chronos/core/supervisor
              desc: the ledger's operations are below the service
            - pkg: github.com/chronos-gpu/chronos/core/keeper
              desc: the ledger's operations are below the service
            - pkg: github.com/chronos-gpu/chronos/core/metrics
              desc: the ledger's operations are below the service
            - pkg: github.com/chronos-gpu/chronos/core/view
              desc: the ledger's operations are below the service
            - pkg: github.com/chronos-gpu/chronos/core/notice
              desc: the ledger's operations are below notices, which the service delivers
            - pkg: github.com/chronos-gpu/chronos/tui
              desc: the ledger's operations are below the app
'''
s = s.replace(anchor, rule + anchor, 1)
open(p, 'w').write(s)
PY2
