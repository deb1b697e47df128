// Command chronos books slices of a shared machine's GPUs for bounded
// times, shows who uses what, and ends bookings on time. This file only
// wires flags to core calls and prints their results.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

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
}

func main() {
	os.Exit(execute(os.Args[1:]))
}

func execute(args []string) int {
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
			fmt.Fprintln(os.Stderr, "chronos:", exit.msg)
		}
		return exit.code
	}
	fmt.Fprintln(os.Stderr, "chronos:", err)
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
			c, err := g.client()
			if err != nil {
				return err
			}
			return listBookings(c, false, false)
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&g.db, "db", "", "ledger file (default: $CHRONOS_DB, else /var/lib/chronos/chronos.db if that directory exists, else ~/.local/state/chronos/chronos.db)")
	root.PersistentFlags().StringVar(&g.backend, "backend", "", "GPU backend: auto, nvml or sim (default: $CHRONOS_BACKEND, else auto)")
	root.AddCommand(
		createCmd(g), listCmd(g), releaseCmd(g), extendCmd(g), availableCmd(g),
		policyCmd(g), eventsCmd(g), initCmd(), versionCmd(),
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

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func createCmd(g *globals) *cobra.Command {
	var forUser, compute string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create DEVICE MEMORY DURATION",
		Short: "Book a share of a GPU's memory for a while",
		Long: `Book a share of one GPU's memory for a bounded time.

MEMORY is a fraction (0.5), a percent (50%) or a size (40GiB).
DURATION is seconds (3600) or a duration (90m, 1h30m, 8h).`,
		Example: "  chronos create 0 0.5 3600\n  chronos create 1 40GiB 2h30m\n  sudo chronos create 0 0.3 8h --user alice",
		Args:    args(cobra.ExactArgs(3)),
		RunE: func(cmd *cobra.Command, a []string) error {
			dev, err := core.ParseDevice(a[0])
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
			p, err := c.Create(core.Request{Device: dev, Memory: mem, Duration: dur, Compute: pct, For: forUser})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(core.JSON(p.Partition, c.Now(), 0))
			}
			fmt.Printf("Booked %d: %s (%s) of GPU %d for %s, until %s.\n", p.ID, core.FormatPercent(p.SharePPM),
				core.FormatBytes(p.Bytes), p.Device, p.User, p.Expires.Local().Format("Mon Jan 2 15:04:05"))
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
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List bookings (live ones; --all for history)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			return listBookings(c, all, asJSON)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include released and expired bookings")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (fields documented in the README)")
	return cmd
}

func listBookings(c *core.Client, all, asJSON bool) error {
	parts, err := c.List(all)
	if err != nil {
		return err
	}
	pol, err := c.Policy()
	if err != nil {
		return err
	}
	now := c.Now()
	if asJSON {
		out := make([]core.PartitionJSON, 0, len(parts))
		for _, p := range parts {
			out = append(out, core.JSON(p.Partition, now, pol.WarnLead))
		}
		return printJSON(out)
	}
	return tui.WriteBookings(os.Stdout, parts, now, pol.WarnLead)
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
					fmt.Fprintln(os.Stderr, "chronos:", err)
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
				p.Expires.Local().Format("Mon Jan 2 15:04:05"), core.FormatDuration(p.Expires.Sub(c.Now())))
			return nil
		},
	}
}

func availableCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "available [DEVICE]",
		Short:   "How much of each GPU is free to book",
		Example: "  chronos available 0",
		Args:    args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			dev := -1
			if len(a) == 1 {
				var err error
				if dev, err = core.ParseDevice(a[0]); err != nil {
					return err
				}
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			avail, err := c.Available(dev)
			if err != nil {
				return err
			}
			if asJSON {
				type row struct {
					Device    int     `json:"device"`
					Free      float64 `json:"free"`
					FreeBytes uint64  `json:"free_bytes"`
					Bookings  int     `json:"bookings"`
				}
				out := make([]row, 0, len(avail))
				for _, a := range avail {
					out = append(out, row{a.Device.Index, float64(a.FreePPM) / 1e6, a.FreeBytes, a.Bookings})
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
  max=7d                         longest booking (and most time left after an extension)`,
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
			evs, err := c.Events(0, 0)
			if err != nil {
				return err
			}
			if last > 0 && len(evs) > last {
				evs = evs[len(evs)-last:]
			}
			if asJSON {
				return printJSON(evs)
			}
			for _, e := range evs {
				id := ""
				if e.Partition != 0 {
					id = fmt.Sprintf(" #%d", e.Partition)
				}
				fmt.Printf("%s  %-9s%s by %s  %s\n", e.Time.Local().Format("2006-01-02 15:04:05.000"), e.Kind, id, e.User, e.Detail)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVarP(&last, "last", "n", 50, "show only the newest N (0: all)")
	return cmd
}

func initCmd() *cobra.Command {
	var shared bool
	var group string
	cmd := &cobra.Command{
		Use:   "init --shared [--group NAME]",
		Short: "Create the machine's shared ledger (root)",
		Long: `Create ` + core.SharedDir + ` for a group of users: owned by root and the group,
setgid, mode 2770; the ledger inside gets mode 0660. Every user in the group
then shares one ledger; everyone else cannot read or change it.`,
		Example: "  sudo chronos init --shared --group gpu",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			if !shared {
				return usageError{errors.New("init: say --shared (a per-user ledger needs no init)")}
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
