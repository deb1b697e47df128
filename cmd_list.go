package main

import (
	"cmp"
	"errors"
	"fmt"
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

func listCmd(g *globals) *cobra.Command {
	var all, asJSON, noHeaders bool
	var output, gpuArg, states string
	var filter view.BookingFilter
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
			if filter.Mine && filter.User != "" {
				return usageError{errors.New("list: --mine or --user, not both")}
			}
			switch {
			case asJSON && output != view.OutputTable && output != view.OutputJSON:
				return usageError{fmt.Errorf("list: --json or -o %s, not both", output)}
			case asJSON:
				output = view.OutputJSON
			case !slices.Contains([]string{view.OutputTable, view.OutputWide, view.OutputJSON, view.OutputIDs}, output):
				return usageError{fmt.Errorf("-o %s: use wide, json or ids", human.Quote(output))}
			}
			filter.GPU = -1
			c, err := g.client()
			if err != nil {
				return err
			}
			if err := knownUser(c, filter.User); err != nil {
				return err
			}
			if gpuArg != "" {
				host := ""
				if host, filter.GPU, err = human.ParseGPU(gpuArg); err != nil {
					return err
				}
				if host == "" {
					host = c.Host() // an index names this host's GPU
				}
				if filter.Host != "" && host != "" && host != filter.Host {
					return usageError{fmt.Errorf("list: --gpu %s is not on --host %s", gpuArg, filter.Host)}
				}
				filter.Host = cmp.Or(filter.Host, host)
			}
			for _, s := range strings.FieldsFunc(states, func(r rune) bool { return r == ',' }) {
				st, err := human.ParseStatus(s)
				if err != nil {
					return err
				}
				filter.States = append(filter.States, st)
			}
			l := view.BookingList{Client: c, All: all || filter.Ended(), Filter: filter, Output: output, NoHeaders: noHeaders}
			return watch.run(cmd, "chronos list", l.Write)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include released and expired bookings")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (fields in docs/json.md); -o json too")
	cmd.Flags().BoolVar(&filter.Mine, "mine", false, "only your bookings")
	cmd.Flags().StringVar(&filter.User, "user", "", "only NAME's bookings (a login name or uid)")
	cmd.Flags().StringVar(&filter.Host, "host", "", "only the bookings of this host's GPUs")
	cmd.Flags().StringVar(&gpuArg, "gpu", "", "only bookings of GPU N (HOST:N, another host's)")
	cmd.Flags().StringVar(&states, "state", "", "only bookings in these states, e.g. live,ending-soon (ended ones read the history)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "wide (more columns), json or ids (one id a line)")
	cmd.Flags().BoolVar(&noHeaders, "no-headers", false, "leave out the table's header line")
	watch.add(cmd)
	return cmd
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
