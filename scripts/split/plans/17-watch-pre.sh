#!/bin/sh
# Issue 20, step fifteen, before plans/17-watch.txt: what the split tool
# cannot do. --watch's redrawing (the alternate screen, a frame every
# interval cut to the window) leaves the flag's method for a function,
# watchScreen, which the plan moves to core/view; migrate's report prints
# to a writer, not to a command; completion's description of a booking is
# a function of its own.
set -e
export PATH=/tmp/tools:$PATH
python3 - <<'PY'
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

p = 'watch.go'
s = open(p).read()
start = s.index('\tvar buf bytes.Buffer\n\tif err := frame(&buf); err != nil {')
end = s.index('\n}\n', start)
loop = s[start:end]
s = s[:start] + '\treturn watchScreen(cmd.Context(), out, w.every, w.interval(), title, frame)' + s[end:]
loop = loop.replace('w.interval()', 'interval').replace('clk.NewTicker(w.every)', 'clk.NewTicker(every)').replace('cmd.Context().Done()', 'ctx.Done()')
s = s.rstrip('\n') + '''

// watchScreen prints a frame every interval (every; interval as a person
// writes it) until ctx ends. On a terminal each frame replaces the last on
// the alternate screen, cut to the window, and the screen is put back as
// it was at the end; elsewhere frames follow one another. An error in the
// first frame ends it; later ones are shown in the frame.
func watchScreen(ctx context.Context, out io.Writer, every time.Duration, interval, title string, frame func(io.Writer) error) error {
''' + loop + '\n}\n'
open(p, 'w').write(s)

sub('cmd_migrate.go', '''func printMigration(cmd *cobra.Command, rep migrate.Report, src, dst storage.Store) {
	out := cmd.OutOrStdout()
''', '''// printMigration says what a migration copied, and which bookings have new
// ids.
func printMigration(out io.Writer, rep migrate.Report, src, dst storage.Store) {
''')
sub('cmd_migrate.go', 'printMigration(cmd, ', 'printMigration(cmd.OutOrStdout(), ')

c = 'completion.go'
sub(c, '''			when := timeLeft(p.Expires.Sub(now)) + " left"
			if p.Upcoming(now) { // its time left is not counted before it starts
				when = fmt.Sprintf("from %s for %s", human.FormatTime(p.Start, now), timeLeft(p.Expires.Sub(p.Start)))
			}
			out = append(out, cobra.CompletionWithDesc(id, fmt.Sprintf("%s · GPU %s · %s · %s",
				human.Printable(p.User), p.GPUName(), human.FormatPercent(p.SharePPM), when)))''', '''			out = append(out, cobra.CompletionWithDesc(id, bookingDescription(p, now)))''')
sub(c, '''// timeLeft is a booking's''', '''// bookingDescription is a booking as completion describes it: owner, GPU,
// share and time left (or when it starts, and for how long).
func bookingDescription(p core.Partition, now time.Time) string {
	when := timeLeft(p.Expires.Sub(now)) + " left"
	if p.Upcoming(now) { // its time left is not counted before it starts
		when = fmt.Sprintf("from %s for %s", human.FormatTime(p.Start, now), timeLeft(p.Expires.Sub(p.Start)))
	}
	return fmt.Sprintf("%s · GPU %s · %s · %s", human.Printable(p.User), p.GPUName(), human.FormatPercent(p.SharePPM), when)
}

// timeLeft is a booking's''')
PY
goimports -local github.com/chronos-gpu/chronos -w watch.go cmd_migrate.go completion.go
