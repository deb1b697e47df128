package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/tui"
)

func releaseCmd(g *globals) *cobra.Command {
	var mine, yes bool
	cmd := &cobra.Command{
		Use:   "release ID... | --mine [--yes]",
		Short: "End bookings now (yours; root: anyone's)",
		Long: `End bookings now: the ones named, or with --mine all your live bookings
(as scancel -u does). --mine asks first on a terminal; without one (a script,
a pipe) it releases nothing unless --yes says so.`,
		Example: "  chronos release 7\n  chronos release 7 9\n  chronos release --mine\n  chronos list --mine --gpu 0 -o ids | xargs chronos release",
		Args: args(func(cmd *cobra.Command, a []string) error {
			if mine {
				return noArgs(cmd, a)
			}
			return cobra.MinimumNArgs(1)(cmd, a)
		}),
		RunE: func(cmd *cobra.Command, a []string) error {
			release := func(c *core.Client, id uint64) (string, error) {
				_, err := c.Release(id)
				return fmt.Sprintf("Released %d.", id), err
			}
			// Release what can be released; report each refusal on its own.
			if !mine {
				return eachID(cmd, g, a, core.ParseID, release)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			ids, err := confirmMine(cmd, c, yes)
			if err != nil || len(ids) == 0 {
				return err
			}
			return doEach(cmd, c, ids, release)
		},
	}
	cmd.Flags().BoolVar(&mine, "mine", false, "release all your live bookings")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "with --mine: do not ask (needed without a terminal)")
	return cmd
}

// confirmMine lists the live bookings of whoever runs chronos and, unless
// yes, asks on the terminal before they are released; with no terminal to
// ask on it refuses. It returns the ids to release: none when there are none.
func confirmMine(cmd *cobra.Command, c *core.Client, yes bool) ([]uint64, error) {
	parts, err := c.List(false)
	if err != nil {
		return nil, err
	}
	var ids []uint64
	var names []string
	for _, p := range parts {
		if p.UID == c.Me().UID {
			ids = append(ids, p.ID)
			names = append(names, fmt.Sprintf("#%d (GPU %s, %s)", p.ID, tui.Printable(c.GPUName(p.Host, p.Device)), core.FormatPercent(p.SharePPM)))
		}
	}
	if len(ids) == 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "%s has no live bookings.\n", tui.Printable(c.Me().User))
		return nil, nil
	}
	what := fmt.Sprintf("%d booking(s) of %s: %s", len(ids), tui.Printable(c.Me().User), strings.Join(names, ", "))
	if yes {
		return ids, nil
	}
	if !isTerminal(cmd.InOrStdin()) {
		return nil, usageError{fmt.Errorf("release --mine would release %s; add --yes to confirm (there is no terminal to ask on)", what)}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "Release %s? [y/N] ", what)
	answer, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return nil, exitStatus{code: exitError, msg: "nothing released"}
	}
	return ids, nil
}
