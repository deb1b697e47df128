// Command soak is Chronos's bounded soak test: many OS processes at once
// against one ledger — API workers using core.Client in a loop, one-shot
// invocations of the real binary, at least three headless monitors and a
// terminal app under tmux — while a checker reads the ledger continuously.
//
// Some creates are booked ahead (--at), some wait in line, some book
// several GPUs as one booking (a gang: 0,1, 0-3, any --gpus N), under a
// policy with quotas and a fast-moving fair share; as root, the workers
// run as root, nobody and daemon in turn.
//
// It holds these, continuously and at the end: no GPU is ever more than
// 100% booked at any instant of any booking, those ahead included, each
// GPU of a gang counted (at the end, in a sweep of the whole history); no
// gang is granted in part (its GPUs, their UUIDs, its host's GPUs, and
// from the line exactly the GPUs it asked for); no user
// is ever over a quota; no request is granted twice, and none is granted
// out of the line's order (no grant to a request of lower priority makes
// one ahead of it wait past what it was told); every booking ends exactly
// once (one "released" or "expired" event) and none is still live a second
// past its deadline; the ledger
// passes bbolt's check and chronos doctor; long-lived processes keep their
// descriptors, threads and memory flat; no operation fails (a refusal for
// want of free share is an answer, not a failure; a busy ledger is a
// failure). A final phase has sixteen processes hammer one device and
// reports the worst wait against the lock timeout.
//
//	go run ./scripts/soak -bin bin/chronos              # 1,000,000 operations, at most 40 minutes
//	go run ./scripts/soak -bin bin/chronos -ops 20000   # a quick one
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

type config struct {
	bin         string
	ops         int64
	duration    time.Duration
	apiWorkers  int
	cliLoops    int
	monitors    int
	tuis        int
	devices     int
	reads       float64
	pause       time.Duration
	contention  time.Duration
	contenders  int
	expiryGrace time.Duration
	checkEvery  time.Duration
	report      string
	keep        bool
	ahead       float64
	waits       float64
	gangs       float64
	policy      string
	users       bool
	etcd        int // members of a local etcd cluster to soak on; 0: a ledger file
}

func main() {
	if raw := os.Getenv(workerEnv); raw != "" {
		os.Exit(runWorker(raw))
	}
	var cfg config
	flag.StringVar(&cfg.bin, "bin", "bin/chronos", "the chronos binary (make build)")
	flag.Int64Var(&cfg.ops, "ops", 1_000_000, "operations to run in the main phase (API workers share them; CLI and contention operations come on top)")
	flag.DurationVar(&cfg.duration, "duration", 40*time.Minute, "bound on the main phase: it stops at -ops or after this long, whichever comes first")
	flag.IntVar(&cfg.apiWorkers, "api", 3, "API worker processes")
	flag.IntVar(&cfg.cliLoops, "cli", 1, "loops running one-shot chronos commands")
	flag.IntVar(&cfg.monitors, "monitors", 3, "headless monitors (chronos --monitor)")
	flag.IntVar(&cfg.tuis, "tui", 1, "terminal apps under tmux (skipped when tmux is missing)")
	flag.IntVar(&cfg.devices, "gpus", 4, "simulated GPUs")
	flag.Float64Var(&cfg.reads, "reads", 0.97, "share of API operations that only read")
	flag.DurationVar(&cfg.pause, "pause", 0, "API workers sleep up to this long between operations")
	flag.DurationVar(&cfg.contention, "contention", 20*time.Second, "length of the phase where -contenders processes hammer one device (0: skip)")
	flag.IntVar(&cfg.contenders, "contenders", 16, "processes in the contention phase")
	flag.DurationVar(&cfg.expiryGrace, "expiry-grace", time.Second, "how long past its deadline a booking may still be stored as live")
	flag.DurationVar(&cfg.checkEvery, "check-every", 10*time.Millisecond, "how often the checker reads the ledger")
	flag.StringVar(&cfg.report, "report", "", "also write the summary as markdown to this file")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (ledger, logs) afterwards")
	flag.Float64Var(&cfg.ahead, "ahead", 0.2, "share of API creates booked ahead of time (--at)")
	flag.Float64Var(&cfg.waits, "waits", 0.1, "share of API creates that wait in line when they do not fit")
	flag.Float64Var(&cfg.gangs, "gangs", 0.2, "share of creates (API and CLI) that book several GPUs as one booking: a list (0,1 or 0-3) or any --gpus N")
	flag.StringVar(&cfg.policy, "policy", "user-gpus=1.5 user-hours=0.1/1m max=1m ahead=10s halflife=1m max-age=30s age-weight=0.5; share=5 for=nobody; share=0.2 for=daemon",
		"policy set before the run (settings; more for=USER settings after semicolons): quotas, and a line whose order moves within the run")
	flag.BoolVar(&cfg.users, "users", true, "as root, run API workers as root, nobody and daemon in turn (quotas and fair share per user)")
	flag.IntVar(&cfg.etcd, "etcd", 0, "soak a ledger on a local etcd cluster of this many members (started here) instead of a file")
	flag.Parse()
	code, err := soak(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

type driver struct {
	cfg     config
	dir, db string
	env     []string
	ledger  storage.Store
	tally   *Tally
	say     func(format string, args ...any)
	started time.Time
	// uids the API workers run as, in turn; self is the binary they run
	// (a copy other users can reach, when there are other users).
	uids []int
	self string
}

func soak(cfg config) (int, error) {
	bin, err := filepath.Abs(cfg.bin)
	if err != nil {
		return 0, err
	}
	if _, err := os.Stat(bin); err != nil {
		return 0, fmt.Errorf("the chronos binary: %w (run make build, or give -bin)", err)
	}
	cfg.bin = bin
	dir, err := os.MkdirTemp("", "chronos-soak-")
	if err != nil {
		return 0, err
	}
	if cfg.keep {
		defer fmt.Fprintln(os.Stderr, "soak: kept", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	d := &driver{cfg: cfg, dir: dir, db: filepath.Join(dir, "chronos.db"), tally: newTally(), started: time.Now()}
	if cfg.etcd > 0 {
		bin, err := etcdtest.Binary()
		if err != nil {
			return 0, err
		}
		c, err := etcdtest.StartIn(bin, dir, cfg.etcd)
		if err != nil {
			return 0, err
		}
		defer c.Stop()
		d.db = c.URL() // every process finds the store by its URL
	}
	d.env = append(os.Environ(), "CHRONOS_STORE="+d.db, "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS="+strconv.Itoa(cfg.devices))
	if d.ledger, err = openLedger(d.db); err != nil {
		return 0, err
	}
	d.say = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(d.started).Seconds(), fmt.Sprintf(format, args...))
	}
	return d.run()
}

//nolint:funlen,gocyclo // the soak's phases in order; a test tool read as a script
func (d *driver) run() (int, error) {
	cfg := d.cfg
	rep := &report{cfg: cfg, start: time.Now()}
	rep.goroutinesStart = runtime.NumGoroutine()

	// The monitors come first: they cache the device inventory too.
	var mons []*monitorProc
	for i := range cfg.monitors {
		m, err := d.startMonitor(i)
		if err != nil {
			return 0, err
		}
		defer m.kill()
		mons = append(mons, m)
	}
	for _, m := range mons {
		if err := m.waitStarted(10 * time.Second); err != nil {
			return 0, err
		}
	}
	if err := d.setUp(); err != nil {
		return 0, err
	}
	var tuis []*tuiProc
	for i := range cfg.tuis {
		t, err := d.startTUI(i)
		if err != nil {
			rep.notes = append(rep.notes, "terminal app skipped: "+err.Error())
			break
		}
		defer t.kill()
		tuis = append(tuis, t)
	}
	d.say("%d monitors and %d terminal app(s) running on %s", len(mons), len(tuis), d.db)
	time.Sleep(2 * time.Second) // let them settle before the first figures
	// Long-lived processes are sampled every few seconds; a leak is growth
	// from the middle of the run to its end (the first minutes fill pools:
	// Go keeps one OS thread per blocked system call it ever had at once).
	type watched struct {
		name string
		pid  int
	}
	var watch []watched
	for _, m := range mons {
		watch = append(watch, watched{m.name, m.cmd.Process.Pid})
	}
	for _, t := range tuis {
		watch = append(watch, watched{t.name, t.pid})
	}
	samples := make([][]ProcFigures, len(watch))
	var samplesMu sync.Mutex
	sample := func() {
		samplesMu.Lock()
		defer samplesMu.Unlock()
		for i, w := range watch {
			samples[i] = append(samples[i], procFigures(w.name, w.pid))
		}
	}
	sample()
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	defer stopSampling()
	go func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
				sample()
			}
		}
	}()

	chk := newChecker(d.ledger, cfg.expiryGrace)
	ctx, stopChecker := context.WithCancel(context.Background())
	defer stopChecker()
	checkerDone := make(chan struct{})
	go func() { chk.run(ctx, cfg.checkEvery); close(checkerDone) }()

	// Main phase.
	until := time.Now().Add(cfg.duration)
	mainStart := time.Now()
	per := (cfg.ops + int64(cfg.apiWorkers) - 1) / int64(max(cfg.apiWorkers, 1))
	var progress atomic.Int64
	workers, err := d.startWorkers("api", cfg.apiWorkers, workerArgs{Ops: per, Until: until, Reads: cfg.reads, Pause: cfg.pause, Devices: cfg.devices,
		Ahead: cfg.ahead, Waits: cfg.waits, Gangs: cfg.gangs}, &progress)
	if err != nil {
		return 0, err
	}
	cliCtx, stopCLI := context.WithCancel(context.Background())
	defer stopCLI()
	var cliWG sync.WaitGroup
	for i := range cfg.cliLoops {
		cliWG.Add(1)
		go func() { defer cliWG.Done(); d.cliLoop(cliCtx, uint64(i)) }()
	}
	stopReporting := make(chan struct{})
	go func() {
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopReporting:
				return
			case <-tick.C:
				n := progress.Load()
				el := time.Since(mainStart).Seconds()
				d.say("main phase: ~%d API operations, %.0f/s; checker %d reads, %d violations", n, float64(n)/el, chk.views.Load(), chk.violations())
			}
		}
	}()
	if err := d.waitWorkers(workers); err != nil {
		return 0, err
	}
	stopCLI()
	cliWG.Wait()
	close(stopReporting)
	rep.mainElapsed = time.Since(mainStart)
	d.say("main phase done in %s", rep.mainElapsed.Round(time.Second))

	// Contention phase: sixteen processes, one device.
	if cfg.contention > 0 && cfg.contenders > 0 {
		cstart := time.Now()
		cw, err := d.startWorkers("contend", cfg.contenders, workerArgs{Ops: 1 << 62, Until: time.Now().Add(cfg.contention), Device: 0, Devices: cfg.devices}, nil)
		if err != nil {
			return 0, err
		}
		if err := d.waitWorkers(cw); err != nil {
			return 0, err
		}
		rep.contentionElapsed = time.Since(cstart)
		d.say("contention phase done in %s", rep.contentionElapsed.Round(time.Second))
	}

	// Drain: every booking reaches its deadline and the monitors get their
	// second to expire it.
	for {
		var latest time.Time
		err := d.ledger.View(context.Background(), func(tx *storage.Tx) error {
			live, err := tx.LivePartitions()
			for _, p := range live {
				if p.Expires.After(latest) {
					latest = p.Expires
				}
			}
			if err != nil {
				return err
			}
			line, err := tx.WaitingRequests()
			if len(line) > 0 && latest.Before(time.Now()) {
				latest = time.Now() // someone still waits: look again
			}
			return err
		})
		if err != nil {
			return 0, err
		}
		if latest.IsZero() {
			break
		}
		if time.Since(latest) > cfg.expiryGrace+5*time.Second {
			break // the checker has flagged it; don't wait for ever
		}
		time.Sleep(min(max(time.Until(latest.Add(cfg.expiryGrace)), 50*time.Millisecond), 2*time.Second))
	}
	time.Sleep(cfg.expiryGrace)
	stopSampling()
	sample()
	for i, ss := range samples {
		f := ss[0]
		mid, end := ss[len(ss)/2], ss[len(ss)-1]
		f.MidFDs, f.MidRSSKiB, f.MidThreads = mid.FDs, mid.RSSKiB, mid.Threads
		f.EndFDs, f.EndRSSKiB, f.EndThreads, f.Gone = end.FDs, end.RSSKiB, end.Threads, end.Gone
		for _, x := range ss {
			f.PeakRSSKiB = max(f.PeakRSSKiB, x.RSSKiB)
			f.PeakThreads = max(f.PeakThreads, x.Threads)
		}
		rep.procs = append(rep.procs, f)
		if i >= len(mons) && end.Gone {
			tuis[i-len(mons)].failure = f.Name + " exited during the soak"
		}
	}
	stopChecker()
	<-checkerDone
	rep.goroutinesEnd = runtime.NumGoroutine()

	// Stop the long-lived processes the way a person would.
	for _, m := range mons {
		m.stop(d)
	}
	for _, t := range tuis {
		t.stop(d)
	}
	for _, m := range mons {
		rep.monitorActs = mergeCounts(rep.monitorActs, m.acts())
		for _, e := range m.errors() {
			d.tally.Add("monitor", outFailed, 0, e)
		}
		if !m.stoppedCleanly {
			d.tally.Add("monitor", outFailed, 0, m.name+" did not stop cleanly on SIGTERM")
		}
	}
	for _, t := range tuis {
		if t.failure != "" {
			d.tally.Add("tui", outFailed, 0, t.failure)
		}
		rep.notes = append(rep.notes, t.notes...)
	}

	rep.final = chk.final()
	rep.checker = chk
	file, ok := d.ledger.(*bolt.Ledger)
	if !ok {
		// etcd keeps its own data whole; the checker read the records.
		rep.doctor = "healthy (etcd: no file to check)"
		file = bolt.New(filepath.Join(d.dir, "none.db"))
	}
	problems, err := file.Check()
	rep.checkProblems = len(problems)
	if err != nil {
		rep.checkErr = err.Error()
	}
	diag, err := file.Diagnose()
	switch {
	case !ok:
	case err != nil:
		rep.doctor = "could not run: " + err.Error()
	case diag.Healthy:
		rep.doctor = fmt.Sprintf("healthy (%d bookings, %d events)", diag.Partitions, diag.Events)
	default:
		rep.doctor = "problems: " + strings.Join(diag.Problems, "; ")
	}
	if st, err := os.Stat(d.db); err == nil {
		rep.ledgerBytes = st.Size()
	}
	if st, err := os.Stat(storage.BackupPath(d.db)); err == nil {
		rep.notes = append(rep.notes, fmt.Sprintf("rolling backup present, %d bytes, written %s before the end", st.Size(), time.Since(st.ModTime()).Round(time.Second)))
	}
	rep.tally = d.tally
	rep.end = time.Now()
	md := rep.markdown()
	fmt.Print(md)
	if cfg.report != "" {
		if err := os.WriteFile(cfg.report, []byte(md), 0o644); err != nil {
			return 0, err
		}
	}
	if rep.passed() {
		return 0, nil
	}
	return 1, nil
}

// setUp sets the soak's policy and, as root, lets other users' workers
// at the ledger: the directory, the file and a copy of this binary they
// can run.
func (d *driver) setUp() error {
	admin := core.NewClient(core.Options{Ledger: d.ledger, As: &domain.Identity{UID: 0, User: "root"}})
	for _, set := range strings.Split(d.cfg.policy, ";") {
		if _, err := admin.SetPolicy(strings.Fields(set)); err != nil {
			return fmt.Errorf("soak policy %q: %w", set, err)
		}
	}
	d.uids = []int{os.Getuid()}
	if !d.cfg.users || os.Geteuid() != 0 {
		return nil
	}
	for _, name := range []string{"nobody", "daemon"} {
		if id, err := proc.LookupUser(name); err == nil && id.UID != 0 {
			d.uids = append(d.uids, id.UID)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	d.self = filepath.Join(d.dir, "soak-worker")
	if err := os.WriteFile(d.self, data, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(d.dir, 0o777); err != nil {
		return err
	}
	if d.cfg.etcd > 0 {
		return nil // a ledger on etcd is the server's: no file to share
	}
	return os.Chmod(d.db, 0o666)
}

func mergeCounts(a, b map[string]int64) map[string]int64 {
	if a == nil {
		a = map[string]int64{}
	}
	for k, v := range b {
		a[k] += v
	}
	return a
}

// --- worker processes ---

type workerProc struct {
	cmd *exec.Cmd
	out string
}

func (d *driver) startWorkers(role string, n int, base workerArgs, progress *atomic.Int64) ([]*workerProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if d.self != "" {
		self = d.self
	}
	var ws []*workerProc
	for i := range n {
		a := base
		a.Role, a.DB, a.Seed = role, d.db, uint64(time.Now().UnixNano())+uint64(i)*7919
		a.Out = filepath.Join(d.dir, fmt.Sprintf("%s-%d.json", role, i))
		// Workers of other users write their tally here.
		if f, err := os.OpenFile(a.Out, os.O_CREATE|os.O_WRONLY, 0o666); err == nil {
			f.Close()
			_ = os.Chmod(a.Out, 0o666)
		}
		a.Progress = progress != nil
		raw, _ := json.Marshal(a)
		cmd := exec.Command(self)
		cmd.Env = append(slices.Clone(d.env), workerEnv+"="+string(raw))
		if uid := d.uids[i%len(d.uids)]; role == "api" && uid != os.Getuid() {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
			cmd.Env = append(cmd.Env, "HOME=/nonexistent")
		}
		cmd.Stderr = os.Stderr
		var stdout io.ReadCloser
		if progress != nil {
			if stdout, err = cmd.StdoutPipe(); err != nil {
				return nil, err
			}
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if progress != nil {
			go func() {
				var last int64
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					var n int64
					if _, err := fmt.Sscanf(sc.Text(), "progress %d", &n); err == nil {
						progress.Add(n - last)
						last = n
					}
				}
			}()
		}
		ws = append(ws, &workerProc{cmd: cmd, out: a.Out})
	}
	return ws, nil
}

func (d *driver) waitWorkers(ws []*workerProc) error {
	for _, w := range ws {
		err := w.cmd.Wait()
		data, rerr := os.ReadFile(w.out)
		if rerr != nil {
			d.tally.Add("worker", outFailed, 0, fmt.Sprintf("worker %d ended (%v) without its tally", w.cmd.Process.Pid, err))
			continue
		}
		t := newTally()
		if err := json.Unmarshal(data, t); err != nil {
			return err
		}
		d.tally.Merge(t)
	}
	return nil
}

// --- one-shot CLI invocations ---

func (d *driver) cliLoop(ctx context.Context, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	var mine []uint64
	for ctx.Err() == nil {
		var args []string
		kind := ""
		r := rng.IntN(10)
		switch {
		case r < 4:
			kind, args = "cli.list", []string{"list", "--json"}
		case r < 5:
			kind, args = "cli.available", []string{"available"}
		case r < 6:
			kind, args = "cli.queue", []string{"queue", "--json"}
			if rng.IntN(2) == 0 {
				kind, args = "cli.usage", []string{"usage", "--json"}
			}
		case r < 8 || len(mine) == 0:
			kind, args = d.cliCreate(rng)
		case r < 9:
			kind, args = "cli.extend", []string{"extend", strconv.FormatUint(mine[rng.IntN(len(mine))], 10), "2"}
		default:
			i := rng.IntN(len(mine))
			kind, args = "cli.release", []string{"release", strconv.FormatUint(mine[i], 10)}
			mine = slices.Delete(mine, i, i+1)
		}
		cmd := exec.Command(d.cfg.bin, args...)
		cmd.Env = d.env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		t0 := time.Now()
		err := cmd.Run()
		took := time.Since(t0)
		msg := strings.TrimSpace(errb.String())
		switch {
		case err == nil:
			d.tally.Add(kind, outOK, took, "")
			if strings.HasPrefix(kind, "cli.gang") || kind == "cli.create" || kind == "cli.ahead" {
				var id uint64
				if _, err := fmt.Sscanf(out.String(), "Booked %d:", &id); err == nil {
					mine = append(mine, id)
				}
			}
			if (kind == "cli.list" || kind == "cli.queue" || kind == "cli.usage") && !json.Valid(out.Bytes()) {
				d.tally.Add(kind+"-json", outFailed, 0, kind+" --json printed invalid JSON")
			}
		case strings.Contains(msg, domain.ErrOverbooked.Error()):
			d.tally.Add(kind, outOverbooked, took, "")
		case strings.Contains(msg, domain.ErrQuota.Error()):
			d.tally.Add(kind, outQuota, took, "")
		case strings.Contains(msg, domain.ErrLeftLine.Error()):
			d.tally.Add(kind, outLeft, took, "")
		case strings.Contains(msg, domain.ErrNotLive.Error()):
			d.tally.Add(kind, outEnded, took, "")
			mine = slices.DeleteFunc(mine, func(id uint64) bool { return slices.Contains(args, strconv.FormatUint(id, 10)) })
		case strings.Contains(msg, "busy"):
			d.tally.Add(kind, outBusy, took, msg)
		default:
			d.tally.Add(kind, outFailed, took, fmt.Sprintf("%v: %s", err, msg))
		}
	}
}

// cliCreate is a create command for the CLI loop: of one GPU, or at
// -gangs of several; now, ahead (--at), or, for a gang, waiting in line.
func (d *driver) cliCreate(rng *rand.Rand) (kind string, args []string) {
	dev, extra := strconv.Itoa(rng.IntN(d.cfg.devices)), []string(nil)
	kind, ahead := "cli.create", "cli.ahead"
	if d.cfg.devices > 1 && rng.Float64() < d.cfg.gangs {
		dev, extra = pickGang(rng, d.cfg.devices).arg()
		kind, ahead = "cli.gang", "cli.gang-ahead"
	}
	args = append([]string{"create", dev, fmt.Sprintf("%d%%", 1+rng.IntN(30)), strconv.Itoa(1 + rng.IntN(5))}, extra...)
	switch rng.IntN(4) {
	case 0:
		return ahead, append(args, "--at", fmt.Sprintf("+%ds", 1+rng.IntN(5)))
	case 1:
		if kind == "cli.gang" { // a gang waits in line through the command, too
			return "cli.gang-wait", append(args, "--wait", "--timeout", waitTimeout.String())
		}
	}
	return kind, args
}

// --- headless monitors ---

type monitorProc struct {
	name           string
	cmd            *exec.Cmd
	mu             sync.Mutex
	counts         map[string]int64
	errs           []string
	started        chan struct{}
	done           chan struct{}
	stoppedCleanly bool
}

func (d *driver) startMonitor(i int) (*monitorProc, error) {
	m := &monitorProc{name: fmt.Sprintf("monitor %d", i+1), counts: map[string]int64{}, started: make(chan struct{}), done: make(chan struct{})}
	m.cmd = exec.Command(d.cfg.bin, "--monitor", "--log-format", "json")
	m.cmd.Env = d.env
	stderr, err := m.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := m.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			var a monitor.Act
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				m.mu.Lock()
				m.errs = append(m.errs, "unexpected output: "+sc.Text())
				m.mu.Unlock()
				continue
			}
			m.mu.Lock()
			m.counts[string(a.Kind)]++
			if a.Kind == "error" && len(m.errs) < keepFailures {
				m.errs = append(m.errs, a.Detail)
			}
			if a.Kind == "stopped" {
				m.stoppedCleanly = true
			}
			m.mu.Unlock()
			if a.Kind == "started" {
				once.Do(func() { close(m.started) })
			}
		}
	}()
	return m, nil
}

func (m *monitorProc) waitStarted(within time.Duration) error {
	select {
	case <-m.started:
		return nil
	case <-time.After(within):
		return fmt.Errorf("%s did not start within %s", m.name, within)
	}
}

func (m *monitorProc) stop(d *driver) {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		d.say("%s did not stop within 10s of SIGTERM", m.name)
		_ = m.cmd.Process.Kill()
	}
	err := m.cmd.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.stoppedCleanly = false
		m.errs = append(m.errs, "exit: "+err.Error())
	}
}

func (m *monitorProc) kill() {
	if m.cmd.ProcessState == nil {
		_ = m.cmd.Process.Kill()
		_ = m.cmd.Wait()
	}
}

func (m *monitorProc) acts() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps(m.counts)
}

func (m *monitorProc) errors() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.errs)
}

func maps(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// --- the terminal app under tmux ---

type tuiProc struct {
	name, socket, session string
	pid                   int
	failure               string
	notes                 []string
}

func (d *driver) startTUI(i int) (*tuiProc, error) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		return nil, errors.New("tmux is not installed")
	}
	t := &tuiProc{name: fmt.Sprintf("terminal app %d", i+1), socket: fmt.Sprintf("chronos-soak-%d-%d", os.Getpid(), i), session: "soak"}
	// exec, so that the pane's process is chronos itself.
	shell := fmt.Sprintf("exec env CHRONOS_STORE=%q CHRONOS_BACKEND=sim CHRONOS_SIM_GPUS=%d %q --log %q",
		d.db, d.cfg.devices, d.cfg.bin, filepath.Join(d.dir, fmt.Sprintf("tui-%d.log", i)))
	cmd := exec.Command(tmux, "-L", t.socket, "-f", "/dev/null", "new-session", "-d", "-s", t.session, "-x", "120", "-y", "40", shell)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tmux new-session: %w: %s", err, out)
	}
	out, err := exec.Command(tmux, "-L", t.socket, "list-panes", "-t", t.session, "-F", "#{pane_pid}").Output()
	if err != nil {
		return nil, fmt.Errorf("tmux list-panes: %w", err)
	}
	if t.pid, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		return nil, fmt.Errorf("tmux pane pid %q", out)
	}
	// Wait for the first screen.
	deadline := time.Now().Add(15 * time.Second)
	for {
		screen := t.capture()
		if strings.Contains(screen, "GPU") {
			break
		}
		if time.Now().After(deadline) {
			t.kill()
			return nil, fmt.Errorf("the app drew no screen in 15s: %q", screen)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return t, nil
}

func (t *tuiProc) capture() string {
	out, _ := exec.Command("tmux", "-L", t.socket, "capture-pane", "-p", "-t", t.session).Output()
	return string(out)
}

func (t *tuiProc) stop(_ *driver) {
	screen := t.capture()
	if t.failure == "" && !strings.Contains(screen, "GPU") {
		t.failure = fmt.Sprintf("%s's screen at the end has no GPU panel: %q", t.name, screen)
	}
	if strings.Contains(screen, "panic") {
		t.failure = t.name + " shows a panic"
	}
	_ = exec.Command("tmux", "-L", t.socket, "send-keys", "-t", t.session, "q").Run()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", t.pid)); err != nil {
			t.notes = append(t.notes, t.name+" quit on q")
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", t.pid)); err == nil && t.failure == "" {
		t.failure = t.name + " did not quit within 5s of q"
	}
	t.kill()
}

func (t *tuiProc) kill() {
	_ = exec.Command("tmux", "-L", t.socket, "kill-server").Run()
}
