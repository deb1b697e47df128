package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/view"
)

// Output forms of `list -o`.
const (
	outputTable = ""
	outputWide  = "wide"
	outputJSON  = "json"
	outputIDs   = "ids"
)

// bookingFilter is which bookings a command shows or acts on: squeue's
// --me, -u and --states for chronos.
type bookingFilter struct {
	mine   bool
	user   string
	host   string // "": any
	gpu    int    // -1: any
	states []domain.BookingStatus
}

// ended says whether the filter asks for ended bookings, which only the
// whole history holds.
func (f bookingFilter) ended() bool {
	return slices.ContainsFunc(f.states, domain.BookingStatus.Ended)
}

// narrows says whether the filter leaves any booking out.
func (f bookingFilter) narrows() bool {
	return f.mine || f.user != "" || f.host != "" || f.gpu >= 0 || len(f.states) > 0
}

func (f bookingFilter) keeps(p core.Partition, c *core.Client, st domain.BookingStatus) bool {
	return (!f.mine || p.UID == c.Me().UID) &&
		(f.user == "" || p.User == f.user || strconv.Itoa(p.UID) == f.user) &&
		(f.host == "" || c.HostOf(p.Partition) == f.host) &&
		(f.gpu < 0 || p.Holds(f.gpu)) &&
		(len(f.states) == 0 || slices.Contains(f.states, st))
}

func listCmd(g *globals) *cobra.Command {
	var all, asJSON, noHeaders bool
	var output, gpuArg, states string
	var filter bookingFilter
	var watch watchFlag
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List bookings (live ones; --all for history)",
		Long: `List bookings: the live ones, or with --all every booking the ledger holds.

--mine, --user NAME, --host NAME, --gpu N (or HOST:N) and --state STATE (the STATE column's words,
joined with hyphens: live, ending-soon, orphaned, gpu-gone, expired,
released; several with commas) keep only the bookings that match; asking for
ended states reads the history too. -o wide adds columns, -o json prints the
fields the README lists, -o ids only the ids (for xargs). --watch redraws
every 2s (--watch 5s) until Ctrl-C.`,
		Example: "  chronos list --mine\n  chronos list --gpu 0 -o wide\n  chronos list --state expired,released --user alice\n" +
			"  chronos list --mine -o ids | xargs chronos release\n  chronos list --watch",
		Args: args(watch.args),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if filter.mine && filter.user != "" {
				return usageError{errors.New("list: --mine or --user, not both")}
			}
			switch {
			case asJSON && output != outputTable && output != outputJSON:
				return usageError{fmt.Errorf("list: --json or -o %s, not both", output)}
			case asJSON:
				output = outputJSON
			case !slices.Contains([]string{outputTable, outputWide, outputJSON, outputIDs}, output):
				return usageError{fmt.Errorf("-o %s: use wide, json or ids", human.Quote(output))}
			}
			filter.gpu = -1
			c, err := g.client()
			if err != nil {
				return err
			}
			if err := knownUser(c, filter.user); err != nil {
				return err
			}
			if gpuArg != "" {
				host := ""
				if host, filter.gpu, err = human.ParseGPU(gpuArg); err != nil {
					return err
				}
				if host == "" {
					host = c.Host() // an index names this host's GPU
				}
				if filter.host != "" && host != "" && host != filter.host {
					return usageError{fmt.Errorf("list: --gpu %s is not on --host %s", gpuArg, filter.host)}
				}
				filter.host = cmp.Or(filter.host, host)
			}
			for _, s := range strings.FieldsFunc(states, func(r rune) bool { return r == ',' }) {
				st, err := human.ParseStatus(s)
				if err != nil {
					return err
				}
				filter.states = append(filter.states, st)
			}
			l := bookingList{c: c, all: all || filter.ended(), filter: filter, output: output, noHeaders: noHeaders}
			return watch.run(cmd, "chronos list", l.write)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include released and expired bookings")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (fields in docs/json.md); -o json too")
	cmd.Flags().BoolVar(&filter.mine, "mine", false, "only your bookings")
	cmd.Flags().StringVar(&filter.user, "user", "", "only NAME's bookings (a login name or uid)")
	cmd.Flags().StringVar(&filter.host, "host", "", "only the bookings of this host's GPUs")
	cmd.Flags().StringVar(&gpuArg, "gpu", "", "only bookings of GPU N (HOST:N, another host's)")
	cmd.Flags().StringVar(&states, "state", "", "only bookings in these states, e.g. live,ending-soon (ended ones read the history)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "wide (more columns), json or ids (one id a line)")
	cmd.Flags().BoolVar(&noHeaders, "no-headers", false, "leave out the table's header line")
	watch.add(cmd)
	return cmd
}

// bookingList is one `chronos list`: which bookings, printed how.
type bookingList struct {
	c         *core.Client
	all       bool
	filter    bookingFilter
	output    string
	noHeaders bool
}

func (l bookingList) write(w io.Writer) error {
	c := l.c
	parts, err := c.List(l.all)
	if err != nil {
		return err
	}
	pol, err := c.Policy()
	if err != nil {
		return err
	}
	now := c.Now()
	kept := parts[:0]
	for _, p := range parts {
		if l.filter.keeps(p, c, p.Status(now, pol.WarnLead)) {
			kept = append(kept, p)
		}
	}
	parts = kept
	switch l.output {
	case outputJSON:
		out := make([]view.PartitionJSON, 0, len(parts))
		for _, p := range parts {
			out = append(out, view.Booking(p, now, pol.WarnLead))
		}
		return printJSON(w, out)
	case outputIDs:
		return writeBuffered(w, func(w io.Writer) error {
			for _, p := range parts {
				fmt.Fprintln(w, p.ID)
			}
			return nil
		})
	}
	if len(parts) == 0 && !l.noHeaders {
		if l.filter.narrows() {
			_, err := fmt.Fprintln(w, "No bookings match.")
			return err
		}
		// Nothing live: say whether there is history to see.
		if !l.all {
			if ended, err := c.List(true); err == nil && len(ended) > 0 {
				_, err = fmt.Fprintf(w, "No live bookings; %d ended (chronos list --all shows them).\n", len(ended))
				return err
			}
		}
	}
	o := view.TableOptions{Wide: l.output == outputWide, NoHeaders: l.noHeaders}
	return writeBuffered(w, func(w io.Writer) error { return view.WriteBookings(w, parts, now, pol.WarnLead, o) })
}

// knownUser checks a --user filter: a name or uid with an account here, or
// one the ledger has bookings of (another host's user, on a lab's
// ledger). A typo is an error rather than an empty list.
func knownUser(c *core.Client, name string) error {
	if name == "" {
		return nil
	}
	if _, err := proc.LookupUser(name); err == nil {
		return nil
	}
	parts, err := c.List(true)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if p.User == name || strconv.Itoa(p.UID) == name {
			return nil
		}
	}
	return usageError{fmt.Errorf("%w: %s has no account here and no booking in the ledger", domain.ErrUnknownUser, human.Quote(name))}
}
