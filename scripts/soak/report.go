package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/chronos-gpu/chronos/storage/bolt"
)

type report struct {
	cfg                            config
	start, end                     time.Time
	mainElapsed, contentionElapsed time.Duration
	tally                          *Tally
	checker                        *checker
	final                          finalCheck
	procs                          []ProcFigures
	monitorActs                    map[string]int64
	checkProblems                  int
	checkErr, doctor               string
	ledgerBytes                    int64
	goroutinesStart, goroutinesEnd int
	notes                          []string
}

func isMain(kind string) bool {
	return strings.HasPrefix(kind, "api.") || strings.HasPrefix(kind, "cli.")
}

func isContention(kind string) bool { return strings.HasPrefix(kind, "contend.") }

func (r *report) failures() int64 {
	_, failed := r.tally.Total(func(string) bool { return true })
	return failed
}

// leaky says whether a long-lived process grew from the middle of the run
// to its end: descriptors or threads beyond a little slack, or memory beyond
// half again plus 32 MiB (a heap that grows with the ledger's history is not
// a leak; one that doubles is worth a look). Worker processes, which only
// have start and end figures, are judged on those.
func leaky(p ProcFigures) bool {
	if p.Name == "worker" {
		return p.EndFDs > p.FDs+2 || p.EndGoroutines > p.Goroutines+2
	}
	return p.Gone || p.EndFDs > p.MidFDs+2 || p.EndThreads > p.MidThreads+4 || p.EndRSSKiB > p.MidRSSKiB*3/2+32<<10
}

func (r *report) invariantViolations() int {
	c := r.checker
	c.mu.Lock()
	n := len(c.overbooked) + len(c.overQuota) + len(c.lateMsgs) + len(c.doubleEnds) + len(c.twice) + len(c.misordered) + len(c.errs) + len(c.partial)
	c.mu.Unlock()
	f := r.final
	n += len(f.missingCreated) + len(f.doubleCreated) + len(f.missingEnd) + len(f.doubleEnd) + len(f.wrongEnd) + f.stillLive + len(f.badGrants)
	n += len(f.overbooked) + len(f.flaws) + len(f.misgranted)
	if f.err != "" || r.checkErr != "" || r.checkProblems > 0 || !strings.HasPrefix(r.doctor, "healthy") {
		n++
	}
	return n
}

func (r *report) passed() bool {
	if r.failures() > 0 || r.invariantViolations() > 0 {
		return false
	}
	for _, p := range r.procs {
		if leaky(p) {
			return false
		}
	}
	return true
}

//nolint:funlen // the report's sections in the order they print
func (r *report) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	cfg := r.cfg
	host, _ := os.Hostname()
	mainOps, _ := r.tally.Total(isMain)
	contOps, _ := r.tally.Total(isContention)
	verdict := "PASS"
	if !r.passed() {
		verdict = "FAIL"
	}
	w("## Soak: %s\n\n", verdict)
	w("`%s`\n\n", strings.Join(os.Args, " "))
	w("Machine: %s, %d CPUs, %s, Go %s, %s. Simulated backend, %d GPUs. Ledger on %s.\n\n",
		host, runtime.NumCPU(), memTotal(), runtime.Version(), kernel(), cfg.devices, fsOf(os.TempDir()))
	w("Processes: %d API workers (core.Client in a loop, %.0f%% reads), %d loop(s) of one-shot `chronos` commands, %d headless monitors, %d terminal app(s) under tmux, and a checker reading the ledger every %s; then %d processes hammering GPU 0 for %s.\n\n",
		cfg.apiWorkers, cfg.reads*100, cfg.cliLoops, cfg.monitors, cfg.tuis, cfg.checkEvery, cfg.contenders, cfg.contention)
	w("| | |\n|---|---|\n")
	w("| operations, main phase | %d in %s (%.0f/s) |\n", mainOps, r.mainElapsed.Round(time.Second), float64(mainOps)/r.mainElapsed.Seconds())
	if r.contentionElapsed > 0 {
		w("| operations, contention phase | %d in %s (%.0f/s) |\n", contOps, r.contentionElapsed.Round(time.Second), float64(contOps)/r.contentionElapsed.Seconds())
	}
	w("| operations, total | **%d** |\n", mainOps+contOps)
	w("| checker reads | %d (p50 %s, p99 %s) |\n", r.checker.views.Load(), fmtDur(r.checker.lat.Quantile(0.5)), fmtDur(r.checker.lat.Quantile(0.99)))
	w("| failures (busy or error) | **%d** |\n", r.failures())
	w("| invariant violations | **%d** |\n", r.invariantViolations())
	w("| whole run | %s |\n\n", r.end.Sub(r.start).Round(time.Second))

	w("### Operations\n\nLatency of every attempt, from the caller's side, under contention (CLI: the whole process; api.wait: until booked or out of the line). Overbooked: refused for want of free share; quota: refused by a quota; left: waited %s in line and left (answers, not failures). Ended: extend or release of a booking that had just expired.\n\n", waitTimeout)
	w("| operation | n | ok | overbooked | quota | left | ended | busy | failed | p50 | p99 | worst |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var worst time.Duration
	var worstKind string
	for _, k := range r.tally.kinds() {
		o, h := r.tally.Ops[k], r.tally.Lat[k]
		if d := time.Duration(h.Max) * time.Microsecond; d > worst && k != "monitor" && k != "tui" && k != "worker" {
			worst, worstKind = d, k
		}
		w("| %s | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s | %s |\n", k, h.N, o[outOK], o[outOverbooked], o[outQuota], o[outLeft], o[outEnded], o[outBusy], o[outFailed],
			fmtDur(h.Quantile(0.5)), fmtDur(h.Quantile(0.99)), fmtDur(time.Duration(h.Max)*time.Microsecond))
	}
	w("\nWorst wait of any operation: **%s** (%s); the lock timeout is %s.\n", fmtDur(worst), worstKind, bolt.DefaultTimeout)
	if h := r.tally.Lat["contend.create"]; h != nil {
		w("Under contention (%d processes on one GPU): worst create %s, worst release %s.\n", cfg.contenders,
			fmtDur(time.Duration(h.Max)*time.Microsecond), fmtDur(time.Duration(r.tally.Lat["contend.release"].maxOr0())*time.Microsecond))
	}

	c := r.checker
	c.mu.Lock()
	w("\n### Invariants\n\n| check | result |\n|---|---|\n")
	w("| most booked at any instant the checker saw | %s |\n", fmtPeaks(c.maxPPM))
	w("| instants over 100%% (now or at any start ahead) | %d |\n", len(c.overbooked))
	w("| gangs seen live not holding each of their GPUs whole | %d (of %d gangs seen live) |\n", len(c.partial), len(c.gangs))
	w("| instants or windows over a quota (%s) | %d |\n", r.cfg.policy, len(c.overQuota))
	w("| requests granted twice (seen live) | %d |\n", len(c.twice))
	w("| grants out of the line's order (looks with someone waiting: %d; grants weighed against a request ahead: %d) | %d |\n", c.waited, c.pairs, len(c.misordered))
	w("| bookings live more than %s past their deadline | %d |\n", cfg.expiryGrace, len(c.lateMsgs))
	w("| bookings ended twice (seen live) | %d |\n", len(c.doubleEnds))
	c.mu.Unlock()
	f := r.final
	held := map[gpuKey]int64{}
	for g, pk := range f.held {
		held[g] = pk.ppm
	}
	w("| most booked at any instant of the whole history (every booking on each of its GPUs, swept at the end) | %s |\n", fmtPeaks(held))
	w("| stretches of time over 100%% in the whole history | %d |\n", len(f.overbooked))
	w("| bookings not held whole (a gang's GPUs and UUIDs, the host's GPUs) | %d |\n", len(f.flaws))
	w("| requests granted other GPUs than they asked (a list exactly, any --gpus N exactly N) | %d |\n", len(f.misgranted))
	w("| bookings at the end | %d: %d released, %d expired, %d still live |\n", f.partitions, f.released, f.expired, f.stillLive)
	w("| without exactly one created event | %d |\n", len(f.missingCreated)+len(f.doubleCreated))
	w("| without exactly one released/expired event matching its state | %d |\n", len(f.missingEnd)+len(f.doubleEnd)+len(f.wrongEnd))
	w("| waiting requests | %d: %d granted, %d timed out, %d cancelled; granted twice, or a booking for none: %d |\n",
		f.requests, f.granted, f.timedOut, f.cancelled, len(f.badGrants))
	w("| expiry lateness (deadline to expired event) | p50 %s, p99 %s, worst %s (%d expiries) |\n",
		fmtDur(f.expiryLateness.Quantile(0.5)), fmtDur(f.expiryLateness.Quantile(0.99)), fmtDur(time.Duration(f.expiryLateness.Max)*time.Microsecond), f.expiryLateness.N)
	check := fmt.Sprintf("%d problems", r.checkProblems)
	if r.checkErr != "" {
		check = r.checkErr
	}
	w("| bbolt Check | %s |\n", check)
	w("| chronos doctor | %s |\n", r.doctor)
	w("| ledger size | %.1f MiB, %d events |\n", float64(r.ledgerBytes)/(1<<20), f.events)
	var acts []string
	for k, v := range r.monitorActs {
		acts = append(acts, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(acts)
	w("| monitor acts (all monitors) | %s |\n", strings.Join(acts, ", "))

	r.gangSection(w)

	w("\n### Long-lived processes\n\nFrom /proc every 5 s: at the start of the main phase → half way through the samples → at the end (after the drain); peak in brackets. Judged flat on the second half.\n\n")
	w("| process | fds | RSS MiB | threads | goroutines | |\n|---|--:|--:|--:|--:|---|\n")
	w("| soak driver + checker (in-process) | | | | %d → %d | |\n", r.goroutinesStart, r.goroutinesEnd)
	procs := slices.Clone(r.procs)
	var workers []ProcFigures
	for _, p := range procs {
		if p.Name == "worker" {
			workers = append(workers, p)
			continue
		}
		flat := "flat"
		if leaky(p) {
			flat = "**grew**"
		}
		w("| %s (pid %d) | %d → %d → %d | %.1f → %.1f → %.1f (%.1f) | %d → %d → %d (%d) | | %s |\n", p.Name, p.PID, p.FDs, p.MidFDs, p.EndFDs,
			float64(p.RSSKiB)/1024, float64(p.MidRSSKiB)/1024, float64(p.EndRSSKiB)/1024, float64(p.PeakRSSKiB)/1024,
			p.Threads, p.MidThreads, p.EndThreads, p.PeakThreads, flat)
	}
	if len(workers) > 0 {
		var maxFD, maxG, maxRSS int
		for _, p := range workers {
			maxFD = max(maxFD, p.EndFDs-p.FDs)
			maxG = max(maxG, p.EndGoroutines-p.Goroutines)
			maxRSS = max(maxRSS, p.EndRSSKiB-p.RSSKiB)
		}
		w("| %d worker processes (in-process figures) | +%d at most | +%.1f at most | | +%d at most | |\n", len(workers), maxFD, float64(maxRSS)/1024, maxG)
	}

	var fails []string
	fails = append(fails, r.tally.Failures...)
	c.mu.Lock()
	for _, l := range [][]string{c.overbooked, c.overQuota, c.lateMsgs, c.doubleEnds, c.twice, c.misordered, c.errs, c.partial} {
		fails = append(fails, l...)
	}
	c.mu.Unlock()
	for _, l := range [][]string{f.missingCreated, f.doubleCreated, f.missingEnd, f.doubleEnd, f.wrongEnd, f.badGrants, f.overbooked, f.flaws, f.misgranted} {
		fails = append(fails, l...)
	}
	if f.err != "" {
		fails = append(fails, "final read: "+f.err)
	}
	if len(fails) > 0 {
		w("\n### Failures and violations (first of each)\n\n")
		for _, s := range fails {
			w("- %s\n", s)
		}
	}
	if len(r.notes) > 0 {
		w("\n### Notes\n\n")
		for _, s := range r.notes {
			w("- %s\n", s)
		}
	}
	return b.String()
}

// fmtPeaks is each GPU's most booked share, in order: "GPU 0 100.0%, …".
func fmtPeaks(ppm map[gpuKey]int64) string {
	var gpus []gpuKey
	for g := range ppm {
		gpus = append(gpus, g)
	}
	slices.SortFunc(gpus, func(a, b gpuKey) int { return strings.Compare(a.String(), b.String()) })
	var out []string
	for _, g := range gpus {
		out = append(out, fmt.Sprintf("GPU %s %.1f%%", g, float64(ppm[g])/1e4))
	}
	return strings.Join(out, ", ")
}

// gangSection counts the bookings of several GPUs apart: asked, made,
// waited for, refused, from the callers' tallies; and as the ledger has
// them at the end.
func (r *report) gangSection(w func(string, ...any)) {
	w("\n### Gangs (bookings of several GPUs)\n\n%.0f%% of creates asked for several GPUs (a list, a range or any --gpus N; direct, ahead, or waiting in line).\n\n", r.cfg.gangs*100)
	w("| operation | asked | made | refused (overbooked or quota) | left the line | failed |\n|---|--:|--:|--:|--:|--:|\n")
	var asked, made, waited, granted, refused int64
	for _, k := range r.tally.kinds() {
		if !strings.Contains(k, ".gang") {
			continue
		}
		o := r.tally.Ops[k]
		n := r.tally.Lat[k].N
		w("| %s | %d | %d | %d | %d | %d |\n", k, n, o[outOK], o[outOverbooked]+o[outQuota], o[outLeft], o[outBusy]+o[outFailed])
		if strings.HasSuffix(k, "-whole") {
			continue
		}
		asked, made, refused = asked+n, made+o[outOK], refused+o[outOverbooked]+o[outQuota]
		if strings.HasSuffix(k, "-wait") {
			waited, granted = waited+n, granted+o[outOK]
		}
	}
	w("| **all** | %d | %d | %d | | |\n", asked, made, refused)
	w("\nWith --wait: %d asked, %d booked (at once, or granted from the line).\n", waited, granted)
	g := r.final.gangs
	var sizes []string
	for n := 2; n <= r.cfg.devices; n++ {
		sizes = append(sizes, fmt.Sprintf("%d of %d GPUs", g.bySize[n], n))
	}
	w("In the ledger at the end: %s; requests for several GPUs that joined the line: %d, %d granted, %d timed out, %d cancelled; gangs without exactly one created and one end event: %d.\n",
		strings.Join(sizes, ", "), g.requests, g.granted, g.timedOut, g.cancelled, g.events)
}

func (h *Hist) maxOr0() int64 {
	if h == nil {
		return 0
	}
	return h.Max
}

func memTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "? memory"
	}
	var kb int64
	for _, l := range splitLines(string(data)) {
		if _, err := fmt.Sscanf(l, "MemTotal: %d kB", &kb); err == nil {
			break
		}
	}
	return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
}

func kernel() string {
	data, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "Linux"
	}
	return "Linux " + strings.TrimSpace(string(data))
}

// fsOf names the file system type of dir, from /proc/mounts (longest
// matching mount point).
func fsOf(dir string) string {
	data, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return "?"
	}
	best, typ := "", "?"
	for _, l := range splitLines(string(data)) {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		if strings.HasPrefix(dir, f[1]) && len(f[1]) > len(best) {
			best, typ = f[1], f[2]
		}
	}
	return fmt.Sprintf("%s (%s)", typ, best)
}
