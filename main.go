// Command chronos books slices of a shared machine's GPUs for bounded
// times, shows who uses what, and ends bookings on time. This file only
// wires flags to core calls and prints their results.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/tui"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// Exit statuses, documented in the README.
const (
	exitError = 1 // the operation failed; the message says why
	exitUsage = 2 // the command line was wrong
)

type usageError struct{ error }

type globals struct {
	db      string
	backend string
	store   core.StoreConfig
}

// monitorFlags are the flags of headless `chronos --monitor`.
type monitorFlags struct {
	on          bool
	policy      string
	logFormat   string
	sampleEvery time.Duration
}

func main() {
	os.Exit(execute(os.Args[1:]))
}

func execute(args []string) int {
	// The flag parser would read "-0.5" as flags: name the real problem.
	for _, a := range args {
		if a == "--" {
			break
		}
		if len(a) > 1 && a[0] == '-' && (a[1] >= '0' && a[1] <= '9' || a[1] == '.') {
			fmt.Fprintf(os.Stderr, "chronos: %s: negative values are not allowed (shares, durations and ids must be positive)\n", a)
			return exitUsage
		}
	}
	g := &globals{}
	root := newRoot(g)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var exit exitStatus
	if errors.As(err, &exit) {
		if exit.msg != "" {
			fmt.Fprintln(os.Stderr, "chronos:", tui.Printable(exit.msg))
		}
		return exit.code
	}
	fmt.Fprintln(os.Stderr, "chronos:", tui.Printable(err.Error()))
	var usage usageError
	if errors.As(err, &usage) || errors.Is(err, core.ErrInput) {
		return exitUsage
	}
	return exitError
}

// exitStatus ends the process with a given status (chronos run passes on
// its command's).
type exitStatus struct {
	code int
	msg  string
}

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRoot(g *globals) *cobra.Command {
	var mon monitorFlags
	var appLog string
	root := &cobra.Command{
		Use:   "chronos",
		Short: "Fair time-sharing of a machine's GPUs",
		Long: `chronos books a share of a GPU's memory for a bounded time, shows every
GPU's load and every booking live, and ends bookings on time.

Run it with no command for the terminal app.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if mon.on {
				return runMonitor(g, mon)
			}
			return runApp(g, appLog)
		},
	}
	root.Flags().StringVar(&appLog, "log", "", "append the app's monitor acts and errors to this file (the screen stays clean)")
	root.Flags().BoolVar(&mon.on, "monitor", false, "run the expiry monitor headless (for tmux or systemd): no terminal needed, logs to stderr")
	root.Flags().StringVar(&mon.policy, "policy", "", `with --monitor: override the stored policy, e.g. "overbudget=terminate grace=10s"`)
	root.Flags().StringVar(&mon.logFormat, "log-format", "text", "with --monitor: text or json")
	root.Flags().DurationVar(&mon.sampleEvery, "sample-every", time.Second, "with --monitor: how often GPU processes are checked")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&g.db, "db", "", "ledger file (default: $CHRONOS_DB, else /var/lib/chronos/chronos.db if that directory exists, else ~/.local/state/chronos/chronos.db)")
	root.PersistentFlags().StringVar(&g.store.Store, "store", "", "the ledger: a file, or etcd://host:port,… shared by many hosts (default: $CHRONOS_STORE, else --db's rules, else "+core.StoreFile()+")")
	root.PersistentFlags().StringVar(&g.store.CACert, "cacert", "", "etcd: CA certificate (PEM) that signed the members' certificates")
	root.PersistentFlags().StringVar(&g.store.Cert, "cert", "", "etcd: this client's certificate (PEM)")
	root.PersistentFlags().StringVar(&g.store.Key, "key", "", "etcd: this client's private key (PEM)")
	root.PersistentFlags().StringVar(&g.backend, "backend", "", "GPU backend: auto, nvml, drm or sim (default: $CHRONOS_BACKEND, else auto)")
	root.AddCommand(
		createCmd(g), listCmd(g), releaseCmd(g), extendCmd(g), availableCmd(g),
		runCmd(g), statsCmd(g), backendsCmd(g),
		policyCmd(g), eventsCmd(g), initCmd(g), versionCmd(), doctorCmd(g),
		migrateCmd(g),
	)
	return root
}

// args wraps a cobra argument check so that a wrong count is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{fmt.Errorf("%s: %w (see chronos %s --help)", cmd.Name(), err, cmd.Name())}
		}
		return nil
	}
}

// storeConfig is the ledger the flags, environment and store file name.
func (g *globals) storeConfig() (core.StoreConfig, error) {
	flags := g.store
	if g.db != "" {
		if flags.Store != "" {
			return flags, usageError{errors.New("give --store or --db, not both")}
		}
		flags.Store = g.db
	}
	return core.FindStore(flags)
}

// ledger is the ledger file, for the commands that work on a file's bytes.
func (g *globals) ledger() (*storage.Ledger, error) {
	cfg, err := g.storeConfig()
	if err != nil {
		return nil, err
	}
	if cfg.Etcd() {
		return nil, fmt.Errorf("the ledger is on etcd (%s), which keeps its own data whole: this command works on a ledger file (give --db PATH)", cfg.Store)
	}
	return storage.New(cfg.Store), nil
}

func (g *globals) client() (*core.Client, error) {
	cfg, err := g.storeConfig()
	if err != nil {
		return nil, err
	}
	return core.OpenAt(cfg, g.deviceSource())
}

// backendKind is the GPU backend asked for: the flag, else CHRONOS_BACKEND.
func (g *globals) backendKind() string {
	if g.backend != "" {
		return g.backend
	}
	return gpu.KindFromEnv()
}

func (g *globals) deviceSource() core.DeviceSource { return core.BackendDevices(g.backendKind()) }

// writeBuffered gives a table writer a buffered stdout: tabwriter writes
// cell by cell, and a system call per cell made `list` of 1,000 bookings
// take 15 ms longer.
func writeBuffered(write func(io.Writer) error) error {
	out := bufio.NewWriter(os.Stdout)
	if err := write(out); err != nil {
		return err
	}
	return out.Flush()
}

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func createCmd(g *globals) *cobra.Command {
	var forUser, compute string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create GPU MEMORY DURATION",
		Short: "Book a share of a GPU's memory for a while",
		Long: `Book a share of one GPU's memory for a bounded time.

GPU is an index on this host (0), or HOST:INDEX (gpu3:0) for another host's
in a ledger many hosts share.
MEMORY is a fraction (0.5), a percent (50%) or a size (40GiB).
DURATION is seconds (3600) or a duration (90m, 1h30m, 8h).`,
		Example: "  chronos create 0 0.5 3600\n  chronos create 1 40GiB 2h30m\n  chronos create gpu3:0 50% 2h\n  sudo chronos create 0 0.3 8h --user alice",
		Args:    args(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, a []string) error {
			host, dev, err := core.ParseGPU(a[0])
			if err != nil {
				return err
			}
			mem, err := core.ParseMemory(a[1])
			if err != nil {
				return err
			}
			dur, err := core.ParseDuration(a[2])
			if err != nil {
				return err
			}
			pct, err := core.ParseCompute(compute)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			p, err := c.Create(core.Request{Host: host, Device: dev, Memory: mem, Duration: dur, Compute: pct, For: forUser})
			if err != nil {
				return err
			}
			if w := p.Room.Warning(p.Bytes); w != "" {
				fmt.Fprintln(os.Stderr, "chronos: warning:", tui.Printable(w))
			}
			if p.ComputePct > 0 {
				if note := core.ComputeCapNote(p.ComputePct, gpu.DetectMPS("")); note != "" {
					fmt.Fprintln(os.Stderr, "chronos: note:", note)
				}
			}
			if asJSON {
				return printJSON(core.JSON(p.Partition, c.Now(), 0))
			}
			fmt.Printf("Booked %d: %s (%s) of GPU %s for %s, until %s.\n", p.ID, core.FormatPercent(p.SharePPM),
				core.FormatBytes(p.Bytes), c.GPUName(p.Host, p.Device), p.User, core.FormatTime(p.Expires, c.Now()))
			fmt.Printf("GPU %s had %s.\n", c.GPUName(p.Host, p.Device), p.Room.Room())
			return nil
		},
	}
	cmd.Flags().StringVar(&forUser, "user", "", "book for another user (root only)")
	cmd.Flags().StringVar(&compute, "compute", "", "cap on the share of SMs, e.g. 25% (applied through MPS where it runs)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the booking as JSON")
	return cmd
}

func listCmd(g *globals) *cobra.Command {
	var all, asJSON bool
	var host string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List bookings (live ones; --all for history)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			return listBookings(c, all, asJSON, host)
		},
	}
	cmd.Flags().StringVar(&host, "host", "", "only the bookings of this host's GPUs")
	cmd.Flags().BoolVar(&all, "all", false, "include released and expired bookings")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (fields documented in the README)")
	return cmd
}

func listBookings(c *core.Client, all, asJSON bool, host string) error {
	parts, err := c.List(all)
	if err != nil {
		return err
	}
	if host != "" {
		parts = slices.DeleteFunc(parts, func(p core.Partition) bool { return c.HostOf(p.Partition) != host })
	}
	pol, err := c.Policy()
	if err != nil {
		return err
	}
	now := c.Now()
	if asJSON {
		out := make([]core.PartitionJSON, 0, len(parts))
		for _, p := range parts {
			out = append(out, p.JSON(now, pol.WarnLead))
		}
		return printJSON(out)
	}
	return writeBuffered(func(w io.Writer) error { return tui.WriteBookings(w, parts, now, pol.WarnLead) })
}

func releaseCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "release ID...",
		Short:   "End bookings now (yours; root: anyone's)",
		Example: "  chronos release 7",
		Args:    args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			ids := make([]uint64, 0, len(a))
			for _, s := range a {
				id, err := core.ParseID(s)
				if err != nil {
					return err
				}
				ids = append(ids, id)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			// Release what can be released; report each refusal on its own.
			status := 0
			for _, id := range ids {
				if _, err := c.Release(id); err != nil {
					fmt.Fprintln(os.Stderr, "chronos:", tui.Printable(err.Error()))
					status = exitError
					continue
				}
				fmt.Printf("Released %d.\n", id)
			}
			if status != 0 {
				return exitStatus{code: status}
			}
			return nil
		},
	}
}

func extendCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "extend ID DURATION",
		Short:   "Give a live booking more time",
		Example: "  chronos extend 7 30m",
		Args:    args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			id, err := core.ParseID(a[0])
			if err != nil {
				return err
			}
			d, err := core.ParseDuration(a[1])
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			p, err := c.Extend(id, d)
			if err != nil {
				return err
			}
			fmt.Printf("Extended %d by %s: now until %s (%s left).\n", id, core.FormatDuration(d),
				core.FormatTime(p.Expires, c.Now()), core.FormatDuration(p.Expires.Sub(c.Now())))
			return nil
		},
	}
}

func availableCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "available [GPU | HOST:]",
		Short:   "How much of each GPU is free to book",
		Example: "  chronos available 0\n  chronos available gpu3:",
		Args:    args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			dev, host := -1, ""
			if len(a) == 1 {
				var err error
				if h, ok := strings.CutSuffix(a[0], ":"); ok {
					host = h
				} else if host, dev, err = core.ParseGPU(a[0]); err != nil {
					return err
				}
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			avail, err := c.AvailableOn(host, dev)
			if err != nil {
				return err
			}
			if asJSON {
				type row struct {
					Host      string  `json:"host,omitempty"`
					Device    int     `json:"device"`
					Free      float64 `json:"free"`
					FreeBytes uint64  `json:"free_bytes"`
					Bookings  int     `json:"bookings"`
				}
				out := make([]row, 0, len(avail))
				for _, a := range avail {
					out = append(out, row{a.Host, a.Device.Index, float64(a.FreePPM) / 1e6, a.FreeBytes, a.Bookings})
				}
				return printJSON(out)
			}
			for _, a := range avail {
				fmt.Println(a)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func policyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show or set what monitors do at expiry and on misuse",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			p, err := c.Policy()
			if err != nil {
				return err
			}
			fmt.Println(core.FormatPolicy(p))
			return nil
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "set KEY=VALUE...",
		Short: "Change the policy (root only)",
		Long: `Change the stored policy. Keys:
  expiry=terminate|notify        what happens to a booking's processes at its end
  overbudget=off|warn|terminate  processes using more memory than booked
  unbooked=off|warn|terminate    GPU processes with no booking, on a GPU that has bookings
  grace=30s                      time between SIGTERM and SIGKILL
  warn=5m                        warning lead before a booking ends
  max=7d                         longest booking (and most time left after an extension)
  admit=booked|physical          admit on booked shares only (memory in use is a warning),
                                 or also refuse what is not physically free`,
		Example: "  sudo chronos policy set expiry=terminate overbudget=warn unbooked=warn grace=30s",
		Args:    args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			p, err := c.SetPolicy(a)
			if err != nil {
				return err
			}
			fmt.Println(core.FormatPolicy(p))
			return nil
		},
	})
	return cmd
}

func eventsCmd(g *globals) *cobra.Command {
	var asJSON bool
	var last int
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Show the audit trail (who created, extended, released; what expired)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			read := func() ([]storage.Event, error) { return c.Events(0, 0) }
			if last > 0 {
				read = func() ([]storage.Event, error) { return c.LastEvents(last) }
			}
			evs, err := read()
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(evs)
			}
			for _, e := range evs {
				fmt.Printf("%s  %s\n", e.Time.Local().Format("2006-01-02 15:04:05.000"), tui.Printable(core.FormatEvent(e)))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVarP(&last, "last", "n", 50, "show only the newest N (0: all)")
	return cmd
}

func initCmd(g *globals) *cobra.Command {
	var shared bool
	var group string
	cmd := &cobra.Command{
		Use:   "init (--shared | --store etcd://…) [--group NAME]",
		Short: "Create the machine's shared ledger, or point it at a lab's ledger on etcd (root)",
		Long: `With --shared: create ` + core.SharedDir + ` for a group of users: owned by root
and the group, setgid and sticky, mode 3770; the ledger inside gets mode 0660. Every user
in the group then shares one ledger; everyone else cannot read or change it.

With --store etcd://host:port,…: check that etcd answers, then write
` + core.StoreFile() + ` (root and the group, mode 0640), which makes that ledger,
shared by every host that names it, the ledger of every user of this host.
--cacert, --cert and --key name the TLS files, kept in the same file.`,
		Example: "  sudo chronos init --shared --group gpu\n  sudo chronos init --store etcd://gpu1:2379,gpu2:2379,gpu3:2379 --group gpu",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			if g.store.Store != "" {
				if shared {
					return usageError{errors.New("init: --shared or --store, not both")}
				}
				return initStore(cmd, g.store, group)
			}
			if !shared {
				return usageError{errors.New("init: say --shared, or --store etcd://… (a per-user ledger needs no init)")}
			}
			path, err := core.InitShared(core.SharedDir, group)
			if err != nil {
				return err
			}
			l := storage.New(path)
			if err := l.Update(func(*storage.Tx) error { return nil }); err != nil {
				return err
			}
			fmt.Printf("Shared ledger ready at %s (group %s, mode 0660).\n", path, groupOrRoot(group))
			return nil
		},
	}
	cmd.Flags().BoolVar(&shared, "shared", false, "create the shared ledger in "+core.SharedDir)
	cmd.Flags().StringVar(&group, "group", "", "group whose members may book (default: root's group)")
	return cmd
}

// initStore is `chronos init --store`: the lab's ledger on etcd becomes this
// host's, once etcd has answered.
func initStore(cmd *cobra.Command, cfg core.StoreConfig, group string) error {
	if !cfg.Etcd() {
		return usageError{fmt.Errorf("init --store %s: give an etcd URL, etcd://host:port,… (a ledger file needs no init; --shared makes the shared one)", cfg.Store)}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: writing %s (try sudo chronos init --store …)", core.ErrNotRoot, core.StoreFile())
	}
	s, err := core.OpenStore(cfg)
	if err != nil {
		return err
	}
	if err := s.Update(func(*storage.Tx) error { return nil }); err != nil {
		return err
	}
	if err := core.WriteStoreFile(core.StoreFile(), cfg, group); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "The ledger at %s answers; %s (group %s, mode 0640) makes it every user's ledger on this host.\n",
		s, core.StoreFile(), groupOrRoot(group))
	return nil
}

func groupOrRoot(g string) string {
	if g == "" {
		return "root"
	}
	return g
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  args(cobra.NoArgs),
		Run: func(cmd *cobra.Command, a []string) {
			fmt.Printf("chronos %s (ledger schema %d)\n", version, storage.SchemaVersion)
		},
	}
}

func runCmd(g *globals) *cobra.Command {
	var partition, compute, warnSignal string
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "run [DEVICE MEMORY DURATION | --partition ID] -- COMMAND [ARGS...]",
		Short: "Run a command inside a booking, ended at the booking's deadline",
		Long: `Book a share (or join your live booking with --partition), run the command
with only the booked GPU visible (CUDA_VISIBLE_DEVICES; on AMD ROCR_ and
HIP_VISIBLE_DEVICES; on Intel ZE_AFFINITY_MASK), CHRONOS_BOOKING_ID,
CHRONOS_PARTITION_ID, CHRONOS_EXPIRES_AT and CHRONOS_DEADLINE_UNIX set (and,
while an MPS daemon runs, the booking's memory and compute limits), and
release the booking when the command ends.

No signal comes before the end unless you ask: the deadline is in
CHRONOS_DEADLINE_UNIX. --signal USR1@5m sends SIGUSR1 to the command's process
group five minutes before the end (as Slurm's --signal; handle it, since
SIGUSR1's default action ends a program). At the deadline the group gets
SIGTERM, then SIGKILL after the grace period. chronos exits with the command's
status, or 124 when it stopped the command because the booking ended.`,
		Example: "  chronos run 0 0.5 1h -- python train.py\n  chronos run 0 0.5 8h --signal USR1@5m -- python train.py\n  chronos run --partition 7 -- python eval.py",
		RunE: func(cmd *cobra.Command, a []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash < 0 || dash == len(a) {
				return usageError{errors.New("run: no command after -- (chronos run 0 0.5 1h -- python train.py)")}
			}
			spec, command := a[:dash], a[dash:]
			opts := core.RunOptions{Command: command, Grace: grace, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
				Say: func(f string, v ...any) { fmt.Fprintf(os.Stderr, "chronos: "+f+"\n", v...) }}
			var err error
			if cmd.Flags().Changed("signal") && cmd.Flags().Changed("warn-signal") {
				return usageError{errors.New("run: --warn-signal is the old name of --signal: give one")}
			}
			if opts.WarnSignal, err = core.ParseWarnSignal(warnSignal); err != nil {
				return err
			}
			switch {
			case partition != "" && len(spec) == 0:
				if opts.Partition, err = core.ParseID(partition); err != nil {
					return err
				}
			case partition == "" && len(spec) == 3:
				if opts.Request, err = parseRequest(spec, compute); err != nil {
					return err
				}
			default:
				return usageError{errors.New("run: give DEVICE MEMORY DURATION, or --partition ID, before --")}
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			opts.MPS = gpu.DetectMPS("")
			res, err := c.Run(context.Background(), opts)
			if err != nil {
				return err
			}
			if res.Expired {
				return exitStatus{code: core.ExitExpired, msg: fmt.Sprintf("booking %d ended; the command was stopped (exit %d)", res.Partition, core.ExitExpired)}
			}
			return exitStatus{code: res.ExitCode}
		},
	}
	cmd.Flags().StringVar(&partition, "partition", "", "run inside this live booking of yours instead of booking")
	cmd.Flags().StringVar(&compute, "compute", "", "cap on the share of SMs, e.g. 25% (applied through MPS)")
	cmd.Flags().StringVar(&warnSignal, "signal", "none", "send SIG to the command LEAD before the end, as SIG@LEAD (USR1@5m); none by default")
	cmd.Flags().StringVar(&warnSignal, "warn-signal", "none", "the old name of --signal")
	cmd.Flags().DurationVar(&grace, "grace", -1, "time between SIGTERM and SIGKILL (default: the policy's, 30s)")
	return cmd
}

func parseRequest(a []string, compute string) (core.Request, error) {
	var r core.Request
	var err error
	if r.Host, r.Device, err = core.ParseGPU(a[0]); err != nil {
		return r, err
	}
	if r.Memory, err = core.ParseMemory(a[1]); err != nil {
		return r, err
	}
	if r.Duration, err = core.ParseDuration(a[2]); err != nil {
		return r, err
	}
	r.Compute, err = core.ParseCompute(compute)
	return r, err
}

func statsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Each GPU's memory, load and processes, with the booking each counts against",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			b, notice, err := c.OpenGPUs(g.backendKind())
			if err != nil {
				return err
			}
			defer b.Close()
			if notice != "" && !asJSON {
				fmt.Fprintln(os.Stderr, "chronos:", notice)
			}
			st, err := c.Stats(b, gpu.DetectMPS(""))
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(st)
			}
			return writeBuffered(func(w io.Writer) error { return tui.WriteStats(w, st) })
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// backendReport answers what the original called check_concurrent_support().
type backendReport struct {
	NVMLAvailable      bool   `json:"nvml_available"`
	NVMLDetail         string `json:"nvml_detail"`
	Driver             string `json:"driver,omitempty"`
	GPUs               int    `json:"gpus"`
	DRMAvailable       bool   `json:"drm_available"`
	DRMDetail          string `json:"drm_detail"`
	MPSRunning         bool   `json:"mps_running"`
	MPSMultiUser       bool   `json:"mps_multi_user"`
	MPSPipeDir         string `json:"mps_pipe_dir"`
	MPSDetail          string `json:"mps_detail,omitempty"`
	ConcurrentPossible bool   `json:"concurrent_possible"`
	Recommended        string `json:"recommended"`
	ActiveBackend      string `json:"active_backend"`
	Mode               string `json:"mode"`
	// On a ledger many hosts share: the other hosts, and clocks more than
	// a second from this host's.
	Hosts         []hostReport `json:"hosts,omitempty"`
	ClockWarnings []string     `json:"clock_warnings,omitempty"`
}

type hostReport struct {
	Host        string   `json:"host"`
	Live        bool     `json:"live"`
	GPUs        int      `json:"gpus"`
	SkewSeconds *float64 `json:"skew_seconds,omitempty"`
}

func backendsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "backends",
		Short: "What this machine supports: NVML, MPS, concurrent or time-sliced sharing",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			var r backendReport
			if n, err := gpu.OpenNVML(); err != nil {
				r.NVMLDetail = err.Error()
			} else {
				devs, _ := n.Devices()
				r.NVMLAvailable, r.Driver, r.GPUs = true, n.DriverVersion(), len(devs)
				r.NVMLDetail = fmt.Sprintf("driver %s, %d GPU(s)", r.Driver, r.GPUs)
				n.Close()
			}
			if d, err := gpu.OpenDRM(gpu.DRMOptions{}); err != nil {
				r.DRMDetail = err.Error()
			} else {
				devs, _ := d.Devices()
				r.DRMAvailable, r.DRMDetail = true, fmt.Sprintf("%d AMD or Intel GPU(s), read through the kernel", len(devs))
			}
			mps := gpu.DetectMPS("")
			r.MPSRunning, r.MPSMultiUser, r.MPSPipeDir, r.MPSDetail = mps.Running, mps.MultiUser, mps.PipeDir, mps.Detail
			r.ConcurrentPossible = r.NVMLAvailable && mps.Running
			r.Mode = mps.Mode()
			if mps.Running && mps.MultiUser {
				r.Mode += ", multi-user"
			}
			switch {
			case !r.NVMLAvailable && r.DRMAvailable:
				r.Recommended = "time-sliced: AMD and Intel GPUs have no MPS; the monitor watches each booking's memory, nothing caps it, and --compute is only recorded"
			case !r.NVMLAvailable:
				r.Recommended = "simulated: no NVIDIA driver is usable here"
			case mps.Running && !mps.MultiUser:
				r.Recommended = "concurrent, but restart MPS with -M so users run side by side instead of queueing"
			case mps.Running:
				r.Recommended = "concurrent: bookings' memory and compute limits are applied through MPS"
			default:
				r.Recommended = "time-sliced works now; for concurrency with memory limits, as root: nvidia-cuda-mps-control -d -M"
			}
			r.ActiveBackend = activeBackend(g.backendKind(), r.NVMLAvailable && r.GPUs > 0, r.NVMLDetail, r.DRMAvailable, r.DRMDetail)
			if err := reportHosts(g, &r); err != nil {
				return err
			}
			if asJSON {
				return printJSON(r)
			}
			fmt.Printf("NVML:                %s\n", availability(r.NVMLAvailable, r.NVMLDetail))
			fmt.Printf("DRM:                 %s\n", availability(r.DRMAvailable, r.DRMDetail))
			fmt.Printf("MPS daemon:          %s\n", mpsLine(mps))
			fmt.Printf("concurrent possible: %s\n", yesNo(r.ConcurrentPossible))
			fmt.Printf("recommended:         %s\n", r.Recommended)
			fmt.Printf("active backend:      %s\n", r.ActiveBackend)
			fmt.Printf("mode:                %s\n", r.Mode)
			for _, h := range r.Hosts {
				state := "live"
				if !h.Live {
					state = "not seen (no monitor publishing)"
				}
				skew := "clock not measured yet"
				if h.SkewSeconds != nil {
					skew = fmt.Sprintf("clock %+.2f s", *h.SkewSeconds)
				}
				fmt.Printf("host %-15s %s, %d GPUs, %s\n", tui.Printable(h.Host)+":", state, h.GPUs, skew)
			}
			for _, w := range r.ClockWarnings {
				fmt.Printf("warning:             %s\n", tui.Printable(w))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// reportHosts adds the other hosts of a shared ledger, with their clocks'
// skew as the monitors measure it, to the report.
func reportHosts(g *globals, r *backendReport) error {
	cfg, err := g.storeConfig()
	if err != nil || !cfg.Etcd() {
		return err
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	hosts, err := c.Hosts()
	if err != nil {
		return err
	}
	for _, h := range hosts {
		hr := hostReport{Host: h.Host, Live: h.Live(), GPUs: len(h.Inventory.Devices)}
		if h.SkewKnown {
			s := h.Skew.Seconds()
			hr.SkewSeconds = &s
		}
		r.Hosts = append(r.Hosts, hr)
	}
	r.ClockWarnings = core.SkewWarnings(hosts)
	return nil
}

// activeBackend says which backend gpu.Open would pick for kind, from what
// the NVML probe above found, without starting NVML a second time.
func activeBackend(kind string, nvmlOK bool, nvmlDetail string, drmOK bool, drmDetail string) string {
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case gpu.KindSim, "simulated":
		return "simulated"
	case gpu.KindNVML:
		if nvmlOK {
			return "nvml"
		}
		return "none: nvml backend unavailable: " + nvmlDetail
	case gpu.KindDRM:
		if drmOK {
			return "drm"
		}
		return "none: drm backend unavailable: " + drmDetail
	case "", gpu.KindAuto:
		if nvmlOK {
			return "nvml"
		}
		if drmOK {
			return "drm"
		}
		return "simulated"
	}
	return fmt.Sprintf("none: unknown GPU backend %q: use auto, nvml, drm or sim", kind)
}

func availability(ok bool, detail string) string {
	if ok {
		return "available (" + detail + ")"
	}
	return "not available: " + detail
}

func mpsLine(m gpu.MPS) string {
	if !m.Running {
		return "not running (pipe directory " + m.PipeDir + ")"
	}
	s := "running"
	if m.MultiUser {
		s += ", multi-user (-M)"
	} else {
		s += ", single-user: other users' clients queue"
	}
	if m.DefaultActiveThreadPercentage != "" {
		s += ", default active threads " + m.DefaultActiveThreadPercentage + "%"
	}
	if m.Detail != "" {
		s += " (" + m.Detail + ")"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// runMonitor is `chronos --monitor`: the monitor engine with no screen.
func runMonitor(g *globals, f monitorFlags) error {
	logger := log.New(os.Stderr, "", 0)
	logAct := func(a core.Act) {
		if f.logFormat == "json" {
			data, _ := json.Marshal(a)
			logger.Print(string(data))
			return
		}
		logger.Printf("%s %s", a.Time.Local().Format("2006-01-02T15:04:05.000Z07:00"), tui.Printable(a.String()))
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return usageError{fmt.Errorf("--log-format %q: use text or json", f.logFormat)}
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	pol, err := c.Policy()
	if err != nil {
		return fmt.Errorf("cannot open the ledger %s: %w", c.Ledger(), err)
	}
	var override *core.Policy
	if f.policy != "" {
		p, err := core.ApplyPolicy(pol, strings.Fields(strings.ReplaceAll(f.policy, ",", " ")))
		if err != nil {
			return err
		}
		override, pol = &p, p
	}
	b, notice, err := c.OpenGPUs(g.backendKind())
	if err != nil {
		return err
	}
	defer b.Close()
	mps := gpu.DetectMPS("")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := core.Act{Time: c.Now(), Kind: storage.EventStarted, Detail: fmt.Sprintf("ledger %s, backend %s, mode %s, as %s; policy %s",
		c.Ledger(), b.Name(), mps.Mode(), c.Me().User, core.FormatPolicy(pol))}
	if notice != "" {
		start.Detail += "; " + notice
	}
	logAct(start)
	m := core.NewMonitor(c, core.MonitorOptions{Backend: b, Policy: override, SampleEvery: f.sampleEvery, MPS: mps, OnAct: logAct})
	err = m.Run(ctx)
	logAct(core.Act{Time: c.Now(), Kind: storage.EventStopped, Detail: "signal received"})
	return err
}

// runApp is `chronos`: the terminal app, with the monitor engine running
// inside it so that bookings are enforced whenever anyone has it open.
func runApp(g *globals, logPath string) error {
	if !term.IsTerminal(os.Stdout.Fd()) || !term.IsTerminal(os.Stdin.Fd()) {
		return usageError{errors.New("the app needs a terminal: run it over SSH or in tmux, use `chronos --monitor` to enforce headless, or `chronos list` for scripts")}
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	if _, err := c.Policy(); err != nil {
		return err
	}
	b, notice, err := c.OpenGPUs(g.backendKind())
	if err != nil {
		return err
	}
	defer b.Close()
	var logFile *os.File
	if logPath != "" {
		if logFile, err = os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600); err != nil {
			return fmt.Errorf("open log: %w", err)
		}
		defer logFile.Close()
	}
	mps := gpu.DetectMPS("")
	acts := make(chan string, 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := core.NewMonitor(c, core.MonitorOptions{Backend: b, MPS: mps, OnAct: func(a core.Act) {
		if logFile != nil {
			fmt.Fprintf(logFile, "%s %s\n", a.Time.Local().Format("2006-01-02T15:04:05.000Z07:00"), tui.Printable(a.String()))
		}
		select {
		case acts <- a.String():
		default: // the screen is behind; the ledger has the act anyway
		}
	}})
	go m.Run(ctx)
	host := c.Host()
	if host == "" {
		host, _ = os.Hostname()
	}
	return tui.Run(tui.Options{Client: c, Backend: b, Notice: notice, Mode: modeLabel(mps), Host: host, Acts: acts})
}

func modeLabel(m gpu.MPS) string {
	switch {
	case m.Running && m.MultiUser:
		return "concurrent (MPS, multi-user)"
	case m.Running:
		return "concurrent (MPS)"
	}
	return "time-sliced"
}

func doctorCmd(g *globals) *cobra.Command {
	var repair, asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor [--repair]",
		Short: "Check the ledger file for damage; --repair rebuilds it from what can be read",
		Long: `Check the ledger: that it opens, passes bbolt's consistency check, has a
schema this chronos reads, that every record decodes, that the index of live
bookings matches them, that every booking has its "created" event, and that no
GPU is booked past 100%.

With --repair a damaged ledger is rebuilt: the damaged file is kept as
<ledger>.damaged-<time>, every record that can still be read is copied into a
new file (live bookings, history, events, policy, inventory), what the damaged
file lost is taken from the rolling backup <ledger>.backup when that is good,
and the new file replaces the old one. Exits 0 when the ledger is healthy (or
was repaired), 1 when problems remain.`,
		Example: "  chronos doctor\n  sudo chronos doctor --repair",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			printDiagnosis := func(d storage.Diagnosis) {
				switch {
				case !d.Exists && d.Healthy:
					fmt.Printf("Ledger %s: not created yet (nothing to check).\n", d.Path)
				case d.Healthy:
					fmt.Printf("Ledger %s: healthy. %d bookings (%d live), %d events, %d claims; schema %d.\n", d.Path, d.Partitions, d.Live, d.Events, d.Claims, d.Schema)
				default:
					fmt.Printf("Ledger %s: %d problem(s):\n", d.Path, len(d.Problems))
					for _, p := range d.Problems {
						fmt.Println("  -", tui.Printable(p))
					}
				}
				fmt.Println("Backup:", d.Backup)
			}
			l, err := g.ledger()
			if err != nil {
				return err
			}
			var healthy bool
			var out any
			if repair {
				r, err := l.Repair()
				if err != nil {
					return err
				}
				healthy, out = r.After.Healthy, r
				if !asJSON {
					if !r.Done {
						printDiagnosis(r.Before)
					} else {
						fmt.Printf("The damaged ledger is saved as %s.\n", r.SavedAs)
						for _, s := range r.Sources {
							fmt.Println("Rebuilt from:", s)
						}
						for _, s := range r.Lost {
							fmt.Println("Lost:", tui.Printable(s))
						}
						fmt.Printf("Wrote a new ledger: %d bookings (%d live), %d events.\n", r.Partitions, r.Live, r.Events)
						printDiagnosis(r.After)
					}
				}
			} else {
				d, err := l.Diagnose()
				if err != nil {
					return err
				}
				healthy, out = d.Healthy, d
				if !asJSON {
					printDiagnosis(d)
					if !d.Healthy {
						fmt.Println("Run `chronos doctor --repair` to rebuild it from what can be read (the damaged file is kept).")
					}
				}
			}
			if asJSON {
				if err := printJSON(out); err != nil {
					return err
				}
			}
			if !healthy {
				return exitStatus{code: exitError}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&repair, "repair", false, "rebuild a damaged ledger from what can be read (keeps the damaged file)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
