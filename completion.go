package main

import (
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/metrics"
	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/storage"
)

// Shell completion (`chronos completion bash|zsh|fish`, cobra's) that knows
// the domain: live booking ids described by owner, GPU and time left, GPU
// indices with their free share, each flag's values, and no file names
// where a file makes no sense. All of it is wired here, once.

// completion is one completion function, cobra's shape.
type completion = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective)

// addCompletions wires completion into the command tree under root.
func addCompletions(root *cobra.Command, g *globals) {
	bookings := func(onlyMine bool) completion { return g.completeBookings(onlyMine) }
	positional := map[string][]completion{
		"release":   {bookings(true)}, // and every further ID
		"extend":    {bookings(true), values("30m", "1h", "2h", "4h", "8h")},
		"hold":      {bookings(true), values("30m", "1h", "2h", "4h")},
		"show":      {bookings(false)},
		"create":    {g.completeGPUs, memories, durations},
		"run":       {g.completeGPUs, memories, durations},
		"available": {g.completeGPUs},
	}
	// Flags by name, or by command/name where one command's differs.
	flags := map[string]completion{
		"events/booking": bookings(false),
		"events/since":   values("10m", "1h", "1d", "7d"),
		"events/kind":    listValues(human.Strings(storage.StoredEventKinds)),
		"backend":        values(view.BackendChoices()...),
		"log-format":     values("text", "json"),
		"metrics-compat": values(string(metrics.CompatDCGM)),
		"signal":         values(signals()...),
		"warn-signal":    values(signals()...),
		"booking":        bookings(true),
		"gpu":            g.completeGPUs,
		"by":             values(human.Strings(report.Bys)...),
		"output":         values("wide\tmore columns", "json\tthe fields scripts read", "ids\tone id a line"),
		"state":          listValues(human.StatusWords()),
		"user":           g.completeOwners,
		"since":          values("1h", "1d", "7d", "30d", "all"),
		"grace":          values("10s", "30s", "1m"),
		"compute":        values("25%", "50%", "75%"),
		"watch":          values("1s", "2s", "5s"),
	}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if fns, ok := positional[cmd.Name()]; ok && cmd.Parent() == root {
			cmd.ValidArgsFunction = nth(fns)
		} else if cmd.ValidArgsFunction == nil && len(cmd.ValidArgs) == 0 {
			cmd.ValidArgsFunction = cobra.NoFileCompletions
		}
		for _, set := range []*pflag.FlagSet{cmd.LocalNonPersistentFlags(), cmd.PersistentFlags()} {
			set.VisitAll(func(f *pflag.Flag) {
				if _, done := cmd.GetFlagCompletionFunc(f.Name); done {
					return
				}
				fn, ok := flags[cmd.Name()+"/"+f.Name]
				if !ok {
					fn, ok = flags[f.Name]
				}
				switch {
				case ok:
				case f.Name == "db" || f.Name == "log":
					return // file names
				default:
					fn = cobra.NoFileCompletions
				}
				_ = cmd.RegisterFlagCompletionFunc(f.Name, fn)
			})
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if bash, _, err := c.Find([]string{"bash"}); c.Name() == "completion" && err == nil && bash != c && bash.RunE != nil {
			bash.Long = strings.Replace(bash.Long, "This script depends on the 'bash-completion' package.\nIf it is not installed already, you can install it via your OS's package manager.\n",
				"It works with or without the 'bash-completion' package.\n", 1)
			gen := bash.RunE
			bash.RunE = func(cmd *cobra.Command, a []string) error {
				if err := gen(cmd, a); err != nil {
					return err
				}
				_, err := fmt.Fprint(cmd.OutOrStdout(), bashWithoutBashCompletion)
				return err
			}
		}
	}
}

// bashWithoutBashCompletion ends the bash script: cobra's script calls
// _get_comp_words_by_ref, which only the bash-completion package defines;
// without it every Tab said "_get_comp_words_by_ref: command not found".
// This stand-in splits the line up to the cursor on blanks alone, so that
// --flag=value and host:index stay one word, as cobra's -n =: asks.
//
//go:embed contrib/bash-completion-fallback.bash
var bashWithoutBashCompletion string

// nth completes the n-th argument with fns[n]. Past the last, release
// takes more ids, and run the command to run, file and command names (as
// with --booking); other commands take nothing more.
func nth(fns []completion) completion {
	return func(cmd *cobra.Command, a []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		n := len(a)
		switch {
		case cmd.Name() == "run" && (n >= len(fns) || cmd.Flags().Changed("booking")):
			return nil, cobra.ShellCompDirectiveDefault
		case n < len(fns):
		case cmd.Name() == "release":
			n = len(fns) - 1
		default:
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return fns[n](cmd, a, toComplete)
	}
}

// values offers fixed values; a tab in one starts its description.
func values(vs ...string) completion {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return vs, cobra.ShellCompDirectiveNoFileComp
	}
}

// listValues completes a comma-separated list, one more value at a time.
func listValues(vs []string) completion {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		done := ""
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			done = toComplete[:i+1]
		}
		out := make([]cobra.Completion, 0, len(vs))
		for _, v := range vs {
			if !slices.Contains(strings.Split(done, ","), v) {
				out = append(out, done+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}

var (
	memories  = values("0.25\ta quarter of the GPU's memory", "0.5\thalf", "1\tthe whole GPU", "20GiB\ta size")
	durations = values("30m", "1h", "2h", "4h", "8h", "1d")
)

func signals() []string {
	return []string{"none\tno signal before the end", "USR1@5m\tSIGUSR1 five minutes before the end", "USR1\tSIGUSR1 at the policy's warning lead",
		"USR2@5m\tSIGUSR2 five minutes before the end", "TERM@1m\tSIGTERM a minute before the end"}
}

// completing reads the bookings a completion offers from: the live ones,
// or with all every one the ledger holds. A ledger that cannot be read
// offers nothing (ok false), and says nothing: the shell is mid-line.
func (g *globals) completing(all bool) (c *core.Client, parts []core.Partition, ok bool) {
	c, err := g.client()
	if err == nil {
		parts, err = c.List(all)
	}
	return c, parts, err == nil
}

// completeBookings offers the live bookings, described by owner, GPU,
// share and time left; onlyMine keeps the ones this user may change (all
// of them for root). IDs already typed are not offered again.
func (g *globals) completeBookings(onlyMine bool) completion {
	return func(_ *cobra.Command, a []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c, parts, ok := g.completing(false)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		now, me := c.Now(), c.Me()
		var out []cobra.Completion
		for _, p := range parts {
			id := strconv.FormatUint(p.ID, 10)
			if (onlyMine && !me.MayChange(p.UID)) || slices.Contains(a, id) {
				continue
			}
			out = append(out, cobra.CompletionWithDesc(id, view.BookingDescription(p, now)))
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeGPUs offers this host's GPU indices with what each has free to
// book.
func (g *globals) completeGPUs(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, err := g.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	avail, err := c.Available(-1)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	out := make([]cobra.Completion, 0, len(avail))
	for _, a := range avail {
		out = append(out, cobra.CompletionWithDesc(strconv.Itoa(a.Device.Index), a.String()))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeOwners offers the owners of the bookings the ledger holds.
func (g *globals) completeOwners(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	_, parts, ok := g.completing(true)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, p := range parts {
		if !slices.Contains(out, p.User) {
			out = append(out, p.User)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
