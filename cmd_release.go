package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/view"
)

func releaseCmd(g *globals) *cobra.Command {
	var mine, yes bool
	var owner string
	cmd := &cobra.Command{
		Use:   "release ID... | --mine [--yes] | --user NAME [--yes]",
		Short: "End bookings now (yours; root: anyone's)",
		Long: `End bookings now: the ones named, or with --mine all your live bookings
(as scancel -u does), or with --user NAME all of NAME's (root). --mine and
--user ask first on a terminal; without one (a script, a pipe) they release
nothing unless --yes says so.`,
		Example: "  chronos release 7\n  chronos release 7 9\n  chronos release --mine\n  sudo chronos release --user bob\n" +
			"  chronos list --mine --gpu 0 -o ids | xargs chronos release",
		Args: idsOrAll("release", &mine, &owner),
		RunE: func(cmd *cobra.Command, a []string) error {
			release := func(c *core.Client, id uint64) (string, error) {
				_, err := writerFor(c).Release(id)
				return fmt.Sprintf("Released %d.", id), err
			}
			// Release what can be released; report each refusal on its own.
			if !mine && owner == "" {
				return eachID(cmd, g, a, human.ParseID, release)
			}
			all := manyAtOnce{asked: "release", verb: "release", nothing: "nothing released", none: "has no live bookings",
				of: func(c *core.Client, uid int) (ids []uint64, names []string, err error) {
					parts, err := c.List(false)
					for _, p := range parts {
						if p.UID == uid {
							ids = append(ids, p.ID)
							names = append(names, fmt.Sprintf("#%d (GPU %s, %s)", p.ID, human.Printable(p.GPUName()), human.FormatPercent(p.SharePPM)))
						}
					}
					return ids, names, err
				}}
			return all.do(cmd, g, mine, owner, yes, "booking(s)", release)
		},
	}
	cmd.Flags().BoolVar(&mine, "mine", false, "release all your live bookings")
	cmd.Flags().StringVar(&owner, "user", "", "release all NAME's live bookings (root; a login name or uid)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "with --mine or --user: do not ask (needed without a terminal)")
	return cmd
}

// ownerOf is whose bookings or requests --mine or --user NAME means: one's
// own, or, for root, anyone's.
func ownerOf(c *core.Client, mine bool, name string) (domain.Identity, error) {
	if mine || name == "" {
		return c.Me(), nil
	}
	who, err := proc.LookupUser(name)
	if err != nil {
		return who, usageError{err}
	}
	if who.UID != c.Me().UID && !c.Me().Root() {
		return who, fmt.Errorf("%w: --user %s acts on another user's bookings (--mine acts on yours)", domain.ErrNotRoot, human.Quote(name))
	}
	return who, nil
}

// idsOrAll takes ids, or --mine or --user NAME and no ids.
func idsOrAll(command string, mine *bool, owner *string) cobra.PositionalArgs {
	return args(func(cmd *cobra.Command, a []string) error {
		if *mine && *owner != "" {
			return usageError{fmt.Errorf("%s: --mine or --user, not both", command)}
		}
		if *mine || *owner != "" {
			return noArgs(cmd, a)
		}
		return cobra.MinimumNArgs(1)(cmd, a)
	})
}

// manyAtOnce is an act on all of a user's bookings or requests (--mine,
// --user NAME): the command ("release"), its verb, what "nothing
// released" says when the answer is no and "has no live bookings" when
// there are none, and which ids are the user's, each named.
type manyAtOnce struct {
	asked, verb, nothing, none string
	of                         func(c *core.Client, uid int) (ids []uint64, names []string, err error)
}

// do finds the user's ids, asks (see confirm), and does each.
func (m manyAtOnce) do(cmd *cobra.Command, g *globals, mine bool, owner string, yes bool, things string, each func(*core.Client, uint64) (string, error)) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	who, err := ownerOf(c, mine, owner)
	if err != nil {
		return err
	}
	ids, names, err := m.of(c, who.UID)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s.\n", human.Printable(who.User), m.none)
		return nil
	}
	flag := " --mine"
	if owner != "" {
		flag = " --user " + owner
	}
	m.asked += flag
	what := fmt.Sprintf("%d %s of %s: %s", len(ids), things, human.Printable(who.User), strings.Join(names, ", "))
	if err := m.confirm(cmd, what, yes); err != nil {
		return err
	}
	return doEach(cmd, c, ids, each)
}

// confirm asks on the terminal before doing m to what, unless yes; with no
// terminal to ask on it refuses.
func (m manyAtOnce) confirm(cmd *cobra.Command, what string, yes bool) error {
	if yes {
		return nil
	}
	if !view.IsTerminal(cmd.InOrStdin()) {
		return usageError{fmt.Errorf("%s would %s %s; add --yes to confirm (there is no terminal to ask on)", m.asked, m.verb, what)}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s %s? [y/N] ", strings.ToUpper(m.verb[:1])+m.verb[1:], what)
	answer, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return exitStatus{code: exitError, msg: m.nothing}
	}
	return nil
}
