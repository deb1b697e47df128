#!/bin/sh
# Issue 20, step thirteen, after plans/15-root.txt: the moved files are
# named for what they hold.
set -e
mv core/view/cmd_queue.go core/view/queue.go
mv core/view/cmd_usage.go core/view/usage.go
mv core/view/cmd_backends.go core/view/backends.go
mv core/view/cmd_policy.go core/view/policy.go
mv core/view/watch.go core/view/screen.go
mv core/setup/cmd_init.go core/setup/init.go
mv core/setup/messages.go core/setup/patherror.go
mv core/human/messages.go core/human/suggest.go
mv core/metrics/serve_metrics.go core/metrics/listen.go
python3 - <<'PY'
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

sub('core/view/queue.go', 'func WriteQueue(', '''// WriteQueue prints the waiting line as a table for `chronos queue`: each
// request's place, what it asks, how long it has waited, its priority,
// when and where it should start, and why it waits.
func WriteQueue(''')
sub('core/setup/init.go', 'func GuardedNote(', '''// GuardedNote is what init adds to its line about a guarded ledger.
func GuardedNote(''')
sub('core/setup/init.go', 'func GroupOrRoot(', '''// GroupOrRoot names who shares a ledger: its group, else root alone.
func GroupOrRoot(''')
sub('core/setup/paths.go', '''// directory and modes, and this host's name in a ledger many hosts
// share. It imports no service: core and the command layer use it.''', '''// directory and modes, and this host's name in a ledger many hosts
// share; the environment variables chronos reads and sets, a ledger path
// that cannot be used in plain words, and what an admin does after init.
// It imports no service: core and the command layer use it.''')
PY
