#!/bin/sh
# Issue 20, step six, after plans/9-migrate.txt: the moved migration tests
# use core/servicetest's client helpers (ClientOn, HostClient, Devices) in
# place of core's internal ones, and a host's client on the fake clock is
# made with that clock rather than given it after (Client.clock is core's).
set -e
python3 - <<'PY'
import re
path = 'core/migrate/migrate_test.go'
s = open(path).read()
s, n = re.subn(r'(\w+) := core\.hostClient\((\w+), ("[^"]+"), ([\w.]+)\)\n\t\1\.clock = clock\n',
               r'\1 := core.NewClient(core.Options{Ledger: \2, Devices: servicetest.Devices, As: &\4, Host: \3, Clock: clock})\n', s)
assert n == 2, n
for old, new in [('core.clientOn(', 'servicetest.ClientOn('), ('core.hostClient(', 'servicetest.HostClient('),
                 ('core.testDevices', 'servicetest.Devices')]:
    assert old in s, old
    s = s.replace(old, new)
open(path, 'w').write(s)
PY
/tmp/tools/goimports -local github.com/chronos-gpu/chronos -w core/migrate/migrate_test.go
# The comments that named the moved function and error by their old names;
# a package comment.
python3 - <<'PY'
path = 'core/migrate/migrate.go'
s = open(path).read()
for old, new in [('Report says what Migrate copied', 'Report says what Host copied'),
                 ('// Migrate carries.', '// Host carries.'),
                 ('// Migrate refuses (ErrMigrated)', '// Host refuses (ErrMigrated)'),
                 ('(ErrMigrationBlocked)', '(ErrBlocked)'),
                 ('booking usage Migrate wrote', 'booking usage Host wrote'),
                 ('package migrate\n', '// Package migrate moves a host between a ledger file of its own and a\n// lab\'s ledger that many hosts share, either way (chronos migrate).\npackage migrate\n')]:
    assert old in s, old
    s = s.replace(old, new, 1)
open(path, 'w').write(s)
PY
# Its depguard rule, before the views' rule in .golangci.yaml.
python3 - <<'PY2'
p = '.golangci.yaml'
s = open(p).read()
anchor = '''        view:
          # The JSON views'''
assert anchor in s
rule = '''        migrate:
          # Moving a host between engines: records over transactions, no
          # client; only the command layer, which opens both ends, imports it.
          files: ["**/core/migrate/*.go", "!$test"]
          deny:
            - pkg: github.com/chronos-gpu/chronos/core$
              desc: a migration copies records below the service; it needs no client
            - pkg: github.com/chronos-gpu/chronos/core/monitor
              desc: a migration copies records below the service and the monitor
            - pkg: github.com/chronos-gpu/chronos/core/supervisor
              desc: a migration copies records below the service
            - pkg: github.com/chronos-gpu/chronos/core/keeper
              desc: a migration copies records below the service
            - pkg: github.com/chronos-gpu/chronos/core/metrics
              desc: a migration copies records below the service
            - pkg: github.com/chronos-gpu/chronos/core/view
              desc: a migration copies records; the command layer prints its report
            - pkg: github.com/chronos-gpu/chronos/tui
              desc: a migration copies records below the app
'''
s = s.replace(anchor, rule + anchor, 1)
open(p, 'w').write(s)
PY2
