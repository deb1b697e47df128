#!/bin/sh
# Issue 20, step fourteen, after plans/16-serve.txt: the moved files are
# named for what they hold, and the comments the tool could not fix.
set -e
export PATH=/tmp/tools:$PATH
mv core/metrics/serve_metrics.go core/metrics/serve.go
mv core/monitor/cmd_monitor.go core/monitor/actlog.go
mv core/monitor/cmd_monitor_test.go core/monitor/actlog_test.go
mv core/view/cmd_list.go core/view/list.go
mv core/view/main.go core/view/write.go
python3 - <<'PY'
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

sub('core/view/write.go', 'func PrintJSON(', '''// PrintJSON prints v as indented JSON: what every --json prints.
func PrintJSON(''')
sub('core/view/list.go', 'func (l BookingList) Write(', '''// Write prints the list: the bookings the filter keeps, in the form asked.
func (l BookingList) Write(''')
PY
