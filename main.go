// Command chronos books slices of a shared machine's GPUs for bounded
// times, shows who uses what, and ends bookings on time. main.go is the
// entry point: the root command, the flags every command shares, and how
// errors become exit statuses. Each command lives in its own cmd_*.go file
// and only wires flags to core calls and prints their results.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// Exit statuses, documented in the README.
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
}

func main() {
	// The first SIGINT or SIGTERM ends the context, which the monitor and
	// waiting commands watch to stop cleanly; it also restores the default
	// action, so a second one ends chronos at once.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
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
	if err == nil {
		return 0
	}
	err = g.explain(cmd, err)
	var exit exitStatus
	if errors.As(err, &exit) {
		if exit.msg != "" {
			fmt.Fprintln(stderr, "chronos:", exit.msg)
		}
		return exit.code
	}
	fmt.Fprintln(stderr, "chronos:", err)
	var usage usageError
	if errors.As(err, &usage) || errors.Is(err, core.ErrInput) {
		return exitUsage
	}
	return exitError
}

func newRoot(g *globals) *cobra.Command {
	var mon monitorFlags
	var appLog string
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
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if _, err := gpu.ParseKind(g.backend); g.backend != "" && err != nil {
				return usageError{fmt.Errorf("--backend %s: use auto, nvml or sim", core.Quote(g.backend))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if mon.on {
				return runMonitor(cmd, g, mon)
			}
			return runApp(cmd, g, appLog)
		},
	}
	root.SetVersionTemplate("chronos {{.Version}}\n")
	root.Flags().StringVar(&appLog, "log", "", "append the app's monitor acts and errors to this file (the screen stays clean)")
	root.Flags().BoolVar(&mon.on, "monitor", false, "run the expiry monitor headless (for tmux or systemd): no terminal needed, logs to stderr")
	root.Flags().StringVar(&mon.policy, "policy", "", `with --monitor: override the stored policy, e.g. "overbudget=terminate grace=10s"`)
	root.Flags().StringVar(&mon.logFormat, "log-format", "text", "with --monitor: text or json")
	root.Flags().DurationVar(&mon.sampleEvery, "sample-every", time.Second, "with --monitor: how often GPU processes are checked")
	root.SetFlagErrorFunc(flagError)
	root.PersistentFlags().StringVar(&g.db, "db", "", "ledger file (default: $CHRONOS_DB, else /var/lib/chronos/chronos.db if that directory exists, else ~/.local/state/chronos/chronos.db)")
	root.PersistentFlags().StringVar(&g.backend, "backend", "", "GPU backend: auto, nvml or sim (default: $CHRONOS_BACKEND, else auto)")
	root.AddCommand(
		createCmd(g), listCmd(g), releaseCmd(g), extendCmd(g), availableCmd(g),
		runCmd(g), statsCmd(g), backendsCmd(g),
		policyCmd(g), eventsCmd(g), initCmd(), versionCmd(), doctorCmd(g),
	)
	return root
}

// args wraps a cobra argument check so that a wrong count is a usage error
// that says where help is, and a mistyped command gets the nearest ones.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		clipped := make([]string, len(a)) // cobra repeats arguments in its messages
		for i, s := range a {
			clipped[i] = core.Clip(s)
		}
		err := check(cmd, clipped)
		switch {
		case err == nil:
			return nil
		case cmd.HasAvailableSubCommands() && len(a) > 0:
			msg := "unknown command " + core.Quote(a[0])
			cmd.SuggestionsMinimumDistance = 2
			if near := cmd.SuggestionsFor(a[0]); len(near) > 0 {
				msg += ": did you mean " + strings.Join(near, " or ") + "?"
			}
			return usageError{fmt.Errorf("%s (see %s --help)", msg, cmd.CommandPath())}
		}
		return usageError{fmt.Errorf("%s: %w (see %s --help)", commandName(cmd), err, cmd.CommandPath())}
	}
}

// noArgs is cobra.NoArgs saying what is wrong in plain words.
func noArgs(_ *cobra.Command, a []string) error {
	if len(a) > 0 {
		return fmt.Errorf("no arguments expected, got %s", core.Quote(a[0]))
	}
	return nil
}

// commandName is the command as a person typed it after "chronos".
func commandName(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return cmd.Name()
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// flagError puts the flag parser's complaints in a person's words, repeating
// at most a little of what was typed.
func flagError(cmd *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	var unknown *pflag.NotExistError
	switch {
	case errors.As(err, &bad):
		want := "not valid"
		switch bad.GetFlag().Value.Type() {
		case "int", "uint":
			want = "not a whole number"
		case "duration":
			want = "not a duration like 30s or 5m"
		case "bool":
			want = "not true or false"
		}
		err = fmt.Errorf("--%s %s: %s", bad.GetFlag().Name, core.Quote(bad.GetValue()), want)
	case errors.As(err, &unknown):
		name := "--" + unknown.GetSpecifiedName()
		if short := unknown.GetSpecifiedShortnames(); short != "" {
			name = "-" + short
		}
		err = fmt.Errorf("unknown flag %s", core.Quote(name))
	}
	return usageError{fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())}
}

// explain turns what the libraries said into a person's words at the top,
// keeping the error matchable: a ledger path that cannot be used says which
// and why; a damaged ledger points at chronos doctor.
func (g *globals) explain(cmd *cobra.Command, err error) error {
	var pathErr *fs.PathError
	if path, perr := core.LedgerPath(g.db); perr == nil && errors.As(err, &pathErr) &&
		(pathErr.Path == path || strings.HasPrefix(path, pathErr.Path+"/")) {
		return ledgerPathError{path: path, from: g.ledgerSource(), err: pathErr}
	}
	if errors.Is(err, storage.ErrDamaged) && cmd.Name() != "doctor" {
		return fmt.Errorf("%w\n`chronos doctor` says what is wrong; `chronos doctor --repair` rebuilds the ledger from what can be read", err)
	}
	return err
}

// ledgerSource says where the ledger's path came from, for messages.
func (g *globals) ledgerSource() string {
	switch {
	case g.db != "":
		return " (--db)"
	case os.Getenv("CHRONOS_DB") != "":
		return " ($CHRONOS_DB)"
	}
	return ""
}

// ledgerPathError is a ledger path that cannot be used, in plain words.
type ledgerPathError struct {
	path, from string
	err        *fs.PathError
}

func (e ledgerPathError) Unwrap() error { return e.err }

func (e ledgerPathError) Error() string {
	why := e.err.Err.Error()
	switch {
	case errors.Is(e.err, fs.ErrNotExist) && e.err.Path == e.path:
		why = "its directory " + filepath.Dir(e.path) + " does not exist"
		if st, err := os.Stat(filepath.Dir(e.path)); err == nil && st.IsDir() {
			why = "no file can be made in " + filepath.Dir(e.path)
		}
	case errors.Is(e.err, fs.ErrNotExist):
		why = e.err.Path + " does not exist"
	case errors.Is(e.err, syscall.ENOTDIR):
		why = "a part of the path is a file, not a directory"
	case errors.Is(e.err, syscall.EISDIR):
		why = "it is a directory"
	case errors.Is(e.err, syscall.EROFS):
		why = "it is on a read-only file system"
	case errors.Is(e.err, fs.ErrPermission):
		why = fmt.Sprintf("%s may not use %s (a shared ledger of a group you are not in?)", core.CurrentIdentity().User, e.err.Path)
	}
	return fmt.Sprintf("cannot use the ledger %s%s: %s", e.path, e.from, why)
}

func (g *globals) ledger() (*storage.Ledger, error) {
	path, err := core.LedgerPath(g.db)
	if err != nil {
		return nil, err
	}
	return storage.New(path), nil
}

func (g *globals) client() (*core.Client, error) {
	l, err := g.ledger()
	if err != nil {
		return nil, err
	}
	return core.NewClient(core.Options{Ledger: l, Devices: g.deviceSource()}), nil
}

// backendKind is the GPU backend asked for: the flag, else CHRONOS_BACKEND.
func (g *globals) backendKind() string {
	if g.backend != "" {
		return g.backend
	}
	return gpu.KindFromEnv()
}

func (g *globals) deviceSource() core.DeviceSource { return core.BackendDevices(g.backendKind()) }

// writeBuffered gives a table writer a buffered w: tabwriter writes cell by
// cell, and a system call per cell made `list` of 1,000 bookings take 15 ms
// longer.
func writeBuffered(w io.Writer, write func(io.Writer) error) error {
	out := bufio.NewWriter(w)
	if err := write(out); err != nil {
		return err
	}
	return out.Flush()
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
