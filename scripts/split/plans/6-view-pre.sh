#!/bin/sh
# Issue 20, step four, before plans/6-view.txt: what the split tool cannot
# do. The JSON views' methods on core's types become functions (renamed
# in the plan once they have left core), the booking's remaining time
# becomes the domain's (the views need it, core keeps using it), and the
# booking's status apart from its GPU (state) is exported for the views (BaseStatus).
set -e
python3 - <<'PY'
import re
def sub(path, old, new, count=1):
    s = open(path).read()
    assert old in s, (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

sub('core/domain/records.go', '''// FillDefaults fills in''', '''// Remaining is how long the partition has left at now: zero once it has
// ended, its whole length while it has not started.
func (p Partition) Remaining(now time.Time) time.Duration {
	if p.EndedAt(now) {
		return 0
	}
	from := now
	if p.Start.After(now) {
		from = p.Start
	}
	return p.Expires.Sub(from)
}

// FillDefaults fills in''')
s = open('core/client.go').read()
s = re.sub(r'\nfunc remaining\(p domain\.Partition, now time\.Time\) time\.Duration \{.*?\n\}\n', '', s, flags=re.S)
s = s.replace('remaining(p.Partition, p.client.now())', 'p.Partition.Remaining(p.client.now())')
s = s.replace('p.state(now, warnLead)', 'p.BaseStatus(now, warnLead)')
s = s.replace('''// state is the record's Status, orphaned too when this machine sees its
// wrapper gone.
func (p Partition) state(''', '''// BaseStatus is the booking's status apart from its GPU: the record's Status,
// orphaned too when this machine sees its wrapper gone.
func (p Partition) BaseStatus(''')
open('core/client.go', 'w').write(s)

sub('core/json.go', 'remaining(p, now)', 'p.Remaining(now)')
sub('core/json.go', 'p.state(now, warnLead)', 'p.BaseStatus(now, warnLead)')
sub('core/json.go', 'func (p Partition) JSON(now time.Time, warnLead time.Duration) PartitionJSON {',
    'func BookingOf(p Partition, now time.Time, warnLead time.Duration) PartitionJSON {')
sub('core/json.go', '// JSON is the booking in its script-facing form with', '// BookingOf is the booking in its script-facing form with')
sub('core/json.go', '// JSON returns the availability', '// AvailableOf returns the availability')
sub('core/json.go', 'func (a Availability) JSON() AvailableJSON {', 'func AvailableOf(a Availability) AvailableJSON {')
sub('core/json.go', '// JSON returns the host', '// HostOf returns the host')
sub('core/json.go', 'func (h HostView) JSON() HostJSON {', 'func HostOf(h HostView) HostJSON {')

sub('cmd_show.go', 'p.JSON(now, pol.WarnLead)', 'core.BookingOf(*p, now, pol.WarnLead)')
sub('cmd_list.go', 'p.JSON(now, pol.WarnLead)', 'core.BookingOf(p, now, pol.WarnLead)')
sub('cmd_available.go', 'a.JSON()', 'core.AvailableOf(a)')
sub('cmd_backends.go', 'h.JSON()', 'core.HostOf(h)')
for f in ['core/monitor/idle_test.go', 'core/monitor/wrapper_test.go']:
    s = open(f).read()
    s = re.sub(r'\b([\w\[\]]+)\.JSON\(', r'core.BookingOf(\1, ', s)
    open(f, 'w').write(s.replace('core.BookingOf(got, ', 'core.BookingOf(*got, '))
# core's own tests read the fields the JSON was made of.
sub('core/inventory_test.go', 'require.True(t, parts[0].JSON(clock.Now(), time.Minute).GPUGone)\n', '')
sub('core/inventory_test.go', 'parts[0].JSON(clock.Now(), time.Minute).State', 'parts[0].BaseStatus(clock.Now(), time.Minute)')
PY
/tmp/tools/goimports -local github.com/chronos-gpu/chronos -w core/client.go
