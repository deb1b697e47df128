// Command chronos books slices of a shared machine's GPUs for bounded
// times, shows who uses what, and ends bookings on time. main.go is the
// entry point: the root command, the flags every command shares, and how
// errors become exit statuses. Each command lives in its own cmd_*.go file
// and only wires flags to core calls and prints their results.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/metrics"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/etcd"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// Exit statuses, documented in the README and chronos(1).
const (
	exitError = 1 // the operation failed; the message says why
	exitUsage = 2 // the command line was wrong
)

type usageError struct{ error }

// exitStatus ends the process with a given status (chronos run passes on
// its command's).
type exitStatus struct {
	code int
	msg  string
}

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// globals are the flags every command shares.
type globals struct {
	db      string
	backend string
	store   setup.StoreConfig
	// metrics, when --metrics serves them, times the ledger's transactions.
	metrics *metrics.Server
	// warn prints what a read of the ledger found wrong that did not stop
	// it (see bolt.Ledger.Warn); nil in the app, whose screen it would
	// break.
	warn func(msg string)
	// ctx is the command's context: Ctrl-C ends it, and with it a wait
	// on the ledger (an etcd transaction retrying).
	ctx context.Context
	// whole is set for a command that answers at once (no --wait, no
	// --follow): on etcd, all of its ledger calls together end within the
	// store's timeout, as its messages promise (see client); cancel ends
	// that deadline's timer.
	whole  bool
	cancel context.CancelFunc
}

// oneShot are the commands that answer at once, unless they wait in line
// or follow.
var oneShot = map[string]bool{"create": true, "list": true, "release": true, "extend": true, "available": true,
	"policy": true, "set": true, "events": true, "hold": true, "queue": true, "cancel": true, "usage": true, "report": true, "show": true}

func main() {
	// The first SIGINT or SIGTERM ends the context, which the monitor and
	// waiting commands watch to stop cleanly; it also restores the default
	// action, so a second one ends chronos at once.
	ctx, stop := signalContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalContext is signal.NotifyContext whose cause (context.Cause) is a
// *core.Interrupted naming the signal: what a waiter says when it is
// stopped. stop restores the signals' default action. Signal handlers are
// the whole process's, so only this layer sets them; core takes contexts
// and channels.
func signalContext(parent context.Context, signals ...os.Signal) (ctx context.Context, stop context.CancelFunc) {
	got := make(chan os.Signal, 1)
	signal.Notify(got, signals...)
	ctx, end := proc.Interruptible(parent, got)
	return ctx, func() {
		signal.Stop(got)
		end()
	}
}

// execute runs the command line args and returns the exit status. Commands
// print to stdout and stderr; errors are printed here, once.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// The flag parser would read "-0.5" as flags: name the real problem.
	for _, a := range args {
		if a == "--" {
			break
		}
		if len(a) > 1 && a[0] == '-' && (a[1] >= '0' && a[1] <= '9' || a[1] == '.') {
			fmt.Fprintf(stderr, "chronos: %s: negative values are not allowed (shares, durations and ids must be positive)\n", a)
			return exitUsage
		}
	}
	g := &globals{}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if g.cancel != nil {
		g.cancel()
	}
	if err == nil {
		return 0
	}
	err = g.explain(cmd, err)
	var exit exitStatus
	if errors.As(err, &exit) {
		if exit.msg != "" {
			fmt.Fprintln(stderr, "chronos:", human.Printable(exit.msg))
		}
		return exit.code
	}
	fmt.Fprintln(stderr, "chronos:", human.PrintableError(err))
	var usage usageError
	if errors.As(err, &usage) || errors.Is(err, domain.ErrInput) {
		return exitUsage
	}
	return exitError
}

func newRoot(g *globals) *cobra.Command {
	var mon monitorFlags
	var appLog string
	var mf metricsFlags
	root := &cobra.Command{
		Use:   "chronos",
		Short: "Fair time-sharing of a machine's GPUs",
		Long: `chronos books a share of a GPU's memory for a bounded time, shows every
GPU's load and every booking live, and ends bookings on time.

Run it with no command for the terminal app.`,
		Version:       fmt.Sprintf("%s (ledger schema %d)", version, storage.SchemaVersion),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          args(noArgs),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			g.ctx = cmd.Context()
			waits := func(flag string) bool {
				f := cmd.Flags().Lookup(flag)
				return f != nil && f.Changed && f.Value.String() == "true"
			}
			g.whole = oneShot[cmd.Name()] && cmd != cmd.Root() && !waits("wait") && !waits("follow")
			if cmd != cmd.Root() || mon.on {
				g.warn = warnOnce(cmd.ErrOrStderr())
			}
			if _, err := gpu.ParseKind(g.backend); g.backend != "" && err != nil {
				return usageError{fmt.Errorf("--backend %s: use auto, nvml, drm or sim", human.Quote(g.backend))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if mon.on {
				return runMonitor(cmd, g, mon, mf)
			}
			return runApp(cmd, g, appLog, mf)
		},
	}
	root.SetVersionTemplate("chronos {{.Version}}\n")
	root.Flags().StringVar(&appLog, "log", "", "append the app's monitor acts and errors to this file (the screen stays clean)")
	root.Flags().BoolVar(&mon.on, "monitor", false, "run the expiry monitor headless (for tmux or systemd): no terminal needed, logs to stderr")
	root.Flags().StringVar(&mon.policy, "policy", "", `with --monitor: override the stored policy, e.g. "overbudget=terminate grace=10s"`)
	root.Flags().StringVar(&mon.logFormat, "log-format", "text", "with --monitor: text or json")
	root.Flags().DurationVar(&mon.sampleEvery, "sample-every", time.Second, "with --monitor: how often GPU processes are checked")
	mf.add(root.Flags())
	root.SetFlagErrorFunc(flagError)
	root.PersistentFlags().StringVar(&g.db, "db", "", "ledger file (default: $CHRONOS_DB, else /var/lib/chronos/chronos.db if that directory exists, else ~/.local/state/chronos/chronos.db)")
	root.PersistentFlags().StringVar(&g.store.Store, "store", "", "the ledger: a file, or etcd://host:port,… shared by many hosts (default: $CHRONOS_STORE, else --db's rules, else "+setup.StoreFile()+")")
	root.PersistentFlags().StringVar(&g.store.CACert, "cacert", "", "etcd: CA certificate (PEM) that signed the members' certificates")
	root.PersistentFlags().StringVar(&g.store.Cert, "cert", "", "etcd: this client's certificate (PEM)")
	root.PersistentFlags().StringVar(&g.store.Key, "key", "", "etcd: this client's private key (PEM)")
	root.PersistentFlags().StringVar(&g.backend, "backend", "", "GPU backend: auto, nvml, drm or sim (default: $CHRONOS_BACKEND, else auto)")
	root.AddCommand(
		createCmd(g), listCmd(g), releaseCmd(g), extendCmd(g), availableCmd(g),
		runCmd(g), statsCmd(g), backendsCmd(g),
		policyCmd(g), eventsCmd(g), initCmd(g), versionCmd(), doctorCmd(g),
		holdCmd(g), migrateCmd(g), queueCmd(g), usageCmd(g),
		reportCmd(g), showCmd(g), environmentCmd(), genManCmd(),
	)
	addCompletions(root, g)
	return root
}

// storeConfig is the ledger the flags, environment and store file name.
func (g *globals) storeConfig() (setup.StoreConfig, error) {
	flags := g.store
	if g.db != "" {
		if flags.Store != "" {
			return flags, usageError{errors.New("give --store or --db, not both")}
		}
		flags.Store = g.db
	}
	return setup.FindStore(flags)
}

// ledger is the ledger file, for the commands that work on a file's bytes.
func (g *globals) ledger() (*bolt.Ledger, error) {
	cfg, err := g.storeConfig()
	if err != nil {
		return nil, err
	}
	if onEtcd(cfg) {
		return nil, fmt.Errorf("the ledger is on etcd (%s), which keeps its own data whole: this command works on a ledger file (give --db PATH)", cfg.Store)
	}
	return bolt.New(cfg.Store), nil
}

func (g *globals) client() (*core.Client, error) {
	cfg, err := g.storeConfig()
	if err != nil {
		return nil, err
	}
	s, err := openStore(cfg)
	if err != nil {
		return nil, err
	}
	if l, ok := s.(*bolt.Ledger); ok {
		l.Warn = g.warn
	}
	if e, ok := s.(*etcd.Store); ok && g.whole && g.cancel == nil {
		// The timeout is the whole command's, not each call's: a create
		// that finds etcd busy, then places the line, still answers
		// within it.
		g.ctx, g.cancel = context.WithTimeoutCause(g.ctx, e.Timeout(),
			fmt.Errorf("%w: etcd did not answer within %s (the whole command's time)", storage.ErrUnavailable, e.Timeout()))
	}
	return core.NewClient(core.Options{Ledger: g.metrics.Timed(s), Devices: g.deviceSource(), Context: g.ctx}), nil
}

// backendKind is the GPU backend asked for: the flag, else CHRONOS_BACKEND.
func (g *globals) backendKind() string {
	if g.backend != "" {
		return g.backend
	}
	return gpu.KindFromEnv()
}

func (g *globals) deviceSource() core.DeviceSource { return core.BackendDevices(g.backendKind()) }
