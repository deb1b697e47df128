package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/storage"
)

// args wraps a cobra argument check so that a wrong count is a usage error
// that says where help is, and a mistyped command gets the nearest ones.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		clipped := make([]string, len(a)) // cobra repeats arguments in its messages
		for i, s := range a {
			clipped[i] = human.Clip(s)
		}
		err := check(cmd, clipped)
		switch {
		case err == nil:
			return nil
		case cmd.HasAvailableSubCommands() && len(a) > 0:
			msg := "unknown command " + human.Quote(a[0])
			cmd.SuggestionsMinimumDistance = 2
			if near := human.Suggest(a[0], cmd.SuggestionsFor); len(near) > 0 {
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
		return fmt.Errorf("no arguments expected, got %s", human.Quote(a[0]))
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
		case watchValue{}.Type():
			want = bad.Unwrap().Error()
		}
		err = fmt.Errorf("--%s %s: %s", bad.GetFlag().Name, human.Quote(bad.GetValue()), want)
	case errors.As(err, &unknown):
		name := "--" + unknown.GetSpecifiedName()
		if short := unknown.GetSpecifiedShortnames(); short != "" {
			name = "-" + short
		}
		err = fmt.Errorf("unknown flag %s", human.Quote(name))
		if near := nearFlags(cmd, unknown.GetSpecifiedName()); len(near) > 0 {
			err = fmt.Errorf("%w: did you mean %s?", err, strings.Join(near, " or "))
		}
	}
	return usageError{fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())}
}

// nearFlags are cmd's flags (its own and those it inherits) within two
// edits of a mistyped long name, or that it begins, nearest first.
func nearFlags(cmd *cobra.Command, typed string) []string {
	var names []string
	seen := map[string]bool{}
	look := func(f *pflag.Flag) {
		if !f.Hidden && !seen[f.Name] {
			seen[f.Name] = true
			names = append(names, f.Name)
		}
	}
	cmd.Flags().VisitAll(look)
	cmd.InheritedFlags().VisitAll(look)
	near := human.Nearest(typed, names)
	for i, n := range near {
		near[i] = "--" + n
	}
	return near
}

// explain turns what the libraries said into a person's words at the top,
// keeping the error matchable: a ledger path that cannot be used says which
// and why; a damaged ledger points at chronos doctor.
func (g *globals) explain(cmd *cobra.Command, err error) error {
	var pathErr *fs.PathError
	if path, perr := setup.LedgerPath(g.db); perr == nil && errors.As(err, &pathErr) &&
		(pathErr.Path == path || strings.HasPrefix(path, pathErr.Path+"/")) {
		return setup.LedgerPathError{Path: path, From: g.ledgerSource(), Err: pathErr}
	}
	if errors.Is(err, storage.ErrDamaged) && cmd.Name() != "doctor" {
		return human.HintedError{Err: err, Hint: "`chronos doctor` says what is wrong; `chronos doctor --repair` rebuilds the ledger from what can be read"}
	}
	return err
}

// warnOnce prints a warning to w the first time it is told one: a command
// that reads the ledger many times (--watch) says it once.
func warnOnce(w io.Writer) func(string) {
	var once sync.Once
	return func(msg string) {
		once.Do(func() { fmt.Fprintln(w, "chronos: warning:", human.Printable(msg)) })
	}
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
