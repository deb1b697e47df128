#!/bin/sh
# Issue 20, step twelve, before plans/15-tui.txt: what the app's parts take
# from the commands' printers (tui/text.go, show.go, report.go, which leave
# tui for core/view in plans/14-printers) is taken so that the parts can
# leave tui for packages of their own without importing it back:
# - Printable is human.Printable (text.go's is a wrapper of it);
# - the bookings tab's LEFT countdown (bookingLeft with the app's timeLeft)
#   is handed to it by New; where the printers have left already (their
#   countdowns in core/view), the tab keeps calling them there;
# - when a booking ended is its record's End (endedAt stays for the
#   printers).
# The booking form takes the room on each GPU, not all the readings, and
# a test draws the GPU panel through its view.
set -e
export PATH=/tmp/tools:$PATH
python3 - <<'PY'
import glob, re
printers = {'tui/text.go', 'tui/show.go', 'tui/report.go', 'tui/text_test.go', 'tui/printable_test.go'}

def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

for f in sorted(glob.glob('tui/*.go')):
    if f in printers:
        continue
    s = open(f).read()
    u = re.sub(r'(?<![\w.])Printable\(', 'human.Printable(', s)
    if u != s:
        if '"github.com/chronos-gpu/chronos/core/human"' not in u:
            u = u.replace('import (\n', 'import (\n\t"github.com/chronos-gpu/chronos/core/human"\n', 1)
        open(f, 'w').write(u)

b = 'tui/bookings.go'
s = open(b).read()
if 'bookingLeft(r.Partition.Partition, now, timeLeft)' in s:
    sub(b, 'c.left = bookingLeft(r.Partition.Partition, now, timeLeft)', 'c.left = t.left(r.Partition.Partition, now)')
    sub(b, '''	noUse    bool     // no row has processes: IN USE is all "-"
}''', '''	noUse    bool     // no row has processes: IN USE is all "-"
	// left is a booking's countdown as LEFT shows it: the time it has
	// left, its length while it has not started, "-" once ended.
	left func(p domain.Partition, now time.Time) string
}''')
    sub(b, '''func newBookingsTab(sh *shared) *bookingsTab {
	t := &bookingsTab{warnLead: policy.Default().WarnLead}''', '''func newBookingsTab(sh *shared, left func(p domain.Partition, now time.Time) string) *bookingsTab {
	t := &bookingsTab{warnLead: policy.Default().WarnLead, left: left}''')
    sub('tui/app.go', '		bookings:  newBookingsTab(sh),', '		bookings:  newBookingsTab(sh, bookingCountdown),')
    sub('tui/app.go', '''// gcPercent is''', '''// bookingCountdown is the bookings tab's LEFT: the app's countdown
// (timeLeft), kept with the commands' printers.
func bookingCountdown(p domain.Partition, now time.Time) string {
	return bookingLeft(p, now, timeLeft)
}

// gcPercent is''')
sub(b, 'now.Sub(endedAt(p.Partition))', 'now.Sub(p.End())')
sub(b, 'c = endedAt(b.Partition.Partition).Compare(endedAt(a.Partition.Partition))', 'c = b.End().Compare(a.End())')

f = 'tui/form.go'
sub(f, 'func newBookingForm(sh *shared, r *readings) *bookingForm {', 'func newBookingForm(sh *shared, avail []core.Availability) *bookingForm {')
sub(f, '	f.setReadings(r)\n', '	f.setAvailable(avail)\n')
sub(f, '''// setReadings takes fresh readings, keeping the chosen GPU.
func (f *bookingForm) setReadings(r *readings) {''', '''// setAvailable takes a fresh reading of the room on each GPU, keeping the
// chosen GPU.
func (f *bookingForm) setAvailable(avail []core.Availability) {''')
sub(f, '	f.devices, f.device = r.avail, 0\n', '	f.devices, f.device = avail, 0\n')
sub('tui/keys.go', 'newBookingForm(m.sh, &m.data)', 'newBookingForm(m.sh, m.data.avail)')
sub('tui/app.go', 'm.form.setReadings(&m.data)', 'm.form.setAvailable(m.data.avail)')

sub('tui/cells_test.go', 'p.draw(panelSize{width: 100, lines: 3, full: full})[0]', 'p.view(100, 3, full)[0]')
PY
gofmt -w tui/*.go
goimports -local github.com/chronos-gpu/chronos -w tui/*.go
