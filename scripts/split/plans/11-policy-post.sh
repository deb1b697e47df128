#!/bin/sh
# Issue 20, step eight, after plans/11-policy.txt: what admit= takes joins
# the table; the groups' caps file is named for them; a package comment;
# comments that named the old functions; the depguard rule.
set -e
export PATH=/tmp/tools:$PATH
python3 scripts/split/merge.py core/policy/policy.go core/policy/physical.go
mv core/policy/group.go core/policy/caps.go
python3 - <<'PY'
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))
sub('core/policy/policy.go', 'package policy\n', '''// Package policy is the ledger's policy as people set it: the table of
// settings (chronos policy set's keys) with the parsing and formatting of
// each, the defaults, and the limits and group caps the settings give
// each user. Admission applies a policy; this package defines it.
package policy
''')
sub('core/policy/policy.go', 'as FormatPolicy prints them', 'as Format prints them')
sub('core/partitions_test.go', 'What FormatPolicy prints, ApplyPolicy reads back.', 'What policy.Format prints, policy.Apply reads back.')

p = '.golangci.yaml'
s = open(p).read()
anchor = '''        proc:
          files: ["**/core/proc/*.go", "!$test"]'''
assert anchor in s
rule = '''        policy:
          # The policy's settings: below admission, which applies them.
          files: ["**/core/policy/*.go", "!$test"]
          deny:
            - pkg: github.com/chronos-gpu/chronos/core$
              desc: the policy's table is below admission and the service
            - pkg: github.com/chronos-gpu/chronos/core/admission
              desc: the policy's table is below admission, which applies it
            - pkg: github.com/chronos-gpu/chronos/core/ledger
              desc: the policy's table is below the ledger's operations
            - pkg: github.com/chronos-gpu/chronos/core/notice
              desc: the policy's table is below notices
            - pkg: github.com/chronos-gpu/chronos/storage
              desc: the policy's table reads no ledger
            - pkg: github.com/chronos-gpu/chronos/gpu
              desc: the policy's table knows settings, not GPUs
            - pkg: github.com/chronos-gpu/chronos/tui
              desc: the policy's table is below the app
'''
s = s.replace(anchor, rule + anchor, 1)
open(p, 'w').write(s)
PY
goimports -local github.com/chronos-gpu/chronos -w core/policy/*.go
