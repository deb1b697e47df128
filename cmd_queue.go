package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/view"
)

// queueCmd is `chronos queue`: the waiting line, in order, with each
// request's reason and ETA; `queue cancel ID` takes a request out.
func queueCmd(g *globals) *cobra.Command {
	var asJSON, mine bool
	var owner string
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "The waiting line: who waits for what, in order, why, and when it should start",
		Long: `Show the requests waiting for room (made with create --wait or run --wait), in
the order room goes to them: highest priority first. Priority is the owner's
fair-share factor (1 for no recent use, 0.5 at their share; see chronos usage)
plus a bonus for time waited. ETA is when a request should start given the
bookings and the requests ahead of it; a request further down starts earlier
only where it cannot delay anyone ahead (backfill). --mine and --user NAME
keep one user's requests, at their places in the whole line.`,
		Example: "  chronos queue\n  chronos queue --mine\n  chronos queue cancel 3\n  chronos queue cancel --mine",
		Args:    args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if mine && owner != "" {
				return usageError{errors.New("queue: --mine or --user, not both")}
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			if err := knownUser(c, owner); err != nil {
				return err
			}
			line, err := c.Queue()
			if err != nil {
				return err
			}
			if mine || owner != "" {
				line = slices.DeleteFunc(line, func(e admission.QueueEntry) bool {
					if mine {
						return e.UID != c.Me().UID
					}
					return e.User != owner && strconv.Itoa(e.UID) != owner
				})
			}
			out := cmd.OutOrStdout()
			if asJSON {
				rows := make([]view.QueueJSON, 0, len(line))
				for _, e := range line {
					rows = append(rows, view.QueueEntry(e, c.Now()))
				}
				return view.PrintJSON(out, rows)
			}
			return view.WriteQueue(out, c, line)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&mine, "mine", false, "only your requests")
	cmd.Flags().StringVar(&owner, "user", "", "only NAME's requests (a login name or uid)")
	cmd.AddCommand(queueCancelCmd(g))
	return cmd
}

// queueCancelCmd is `chronos queue cancel REQUEST... | --mine | --user NAME`.
func queueCancelCmd(g *globals) *cobra.Command {
	var mine, yes bool
	var owner string
	cmd := &cobra.Command{
		Use:   "cancel REQUEST... | --mine [--yes] | --user NAME [--yes]",
		Short: "Take waiting requests out of the line (yours; root: anyone's)",
		Long: `Take waiting requests out of the line: the ones named, or with --mine all
yours, or with --user NAME all of NAME's (root). --mine and --user ask first on
a terminal; without one they cancel nothing unless --yes says so.`,
		Example: "  chronos queue cancel 3\n  chronos queue cancel --mine\n  sudo chronos queue cancel --user bob --yes",
		Args:    idsOrAll("queue cancel", &mine, &owner),
		RunE: func(cmd *cobra.Command, a []string) error {
			cancel := func(c *core.Client, id uint64) (string, error) {
				return fmt.Sprintf("Request %d left the line.", id), writerFor(c).Cancel(id)
			}
			if !mine && owner == "" {
				return eachID(cmd, g, a, human.ParseRequestID, cancel)
			}
			all := manyAtOnce{asked: "queue cancel", verb: "cancel", nothing: "nothing cancelled", none: "has no requests waiting",
				of: func(c *core.Client, uid int) (ids []uint64, names []string, err error) {
					line, err := c.Queue()
					for _, e := range line {
						if e.UID == uid {
							ids = append(ids, e.ID)
							names = append(names, fmt.Sprintf("#%d (position %d)", e.ID, e.Position))
						}
					}
					return ids, names, err
				}}
			return all.do(cmd, g, mine, owner, yes, "request(s)", cancel)
		},
	}
	cmd.Flags().BoolVar(&mine, "mine", false, "cancel all your waiting requests")
	cmd.Flags().StringVar(&owner, "user", "", "cancel all NAME's waiting requests (root; a login name or uid)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "with --mine or --user: do not ask (needed without a terminal)")
	return cmd
}

// eachID reads every id first with parse (a bad one changes nothing), then
// does each in turn (see doEach).
func eachID(cmd *cobra.Command, g *globals, a []string, parse func(string) (uint64, error), do func(c *core.Client, id uint64) (string, error)) error {
	ids := make([]uint64, 0, len(a))
	for _, s := range a {
		id, err := parse(s)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	return doEach(cmd, c, ids, do)
}

// doEach does each id in turn, saying what it did or why not: one refusal
// does not stop the others, and makes the exit status 1.
func doEach(cmd *cobra.Command, c *core.Client, ids []uint64, do func(c *core.Client, id uint64) (string, error)) error {
	status := 0
	for _, id := range ids {
		done, err := do(c, id)
		if err != nil {
			fmt.Fprintln(cmd.ErrOrStderr(), "chronos:", human.Printable(err.Error()))
			status = exitError
			continue
		}
		fmt.Fprintln(cmd.OutOrStdout(), done)
	}
	if status != 0 {
		return exitStatus{code: status}
	}
	return nil
}

// lineFlags are the flags create and run share for booking ahead and
// waiting in line.
type lineFlags struct {
	gpus    int
	wait    bool
	timeout time.Duration
	at      string
	given   func(name string) bool // whether the flag was typed
	note    func(string)           // says how --at was read, when it may surprise
}

func (f *lineFlags) add(cmd *cobra.Command) {
	cmd.Flags().IntVar(&f.gpus, "gpus", 0, "how many GPUs, as one booking: with any, the best connected N with room (any 100% 8h --gpus 4); with a list, as many as it names")
	cmd.Flags().BoolVar(&f.wait, "wait", false, "if it cannot start now (GPU full, a quota reached), wait in line until it can")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "with --wait: leave the line after this long (default: wait as long as it takes)")
	cmd.Flags().StringVar(&f.at, "at", "", `start later: 14:00 or 9am (tomorrow's once today's has passed), "tomorrow 09:00", 2026-12-01 09:00, RFC 3339 or +2h`)
	f.given = cmd.Flags().Changed
	f.note = func(s string) { cmd.PrintErrln("chronos: " + s) }
}

// apply checks the flags and puts the start and the GPU count into req.
func (f *lineFlags) apply(req *core.Request) error {
	if f.given("gpus") && f.gpus < 1 {
		return usageError{fmt.Errorf("--gpus %d: ask for 1 GPU or more (any 50%% 2h --gpus 2)", f.gpus)}
	}
	req.Count = f.gpus
	if f.given("timeout") && (f.timeout <= 0 || !f.wait) {
		return usageError{errors.New("--timeout goes with --wait, and must be positive (without it, --wait waits as long as it takes)")}
	}
	if f.given("at") && strings.TrimSpace(f.at) == "" {
		return usageError{errors.New(`--at needs a start: 14:00, "tomorrow 09:00", 2026-12-01 09:00, RFC 3339 or +2h (without --at, it starts now)`)}
	}
	if f.at == "" {
		return nil
	}
	now := clock.System().Now()
	start, err := human.ParseStart(f.at, now)
	if note := human.StartNote(f.at, start, now); err == nil && note != "" {
		f.note(note)
	}
	req.Start = start
	return err
}

// waitOptions are the waiting line's options, or nil without --wait.
func (f *lineFlags) waitOptions() *admission.WaitOptions {
	if !f.wait {
		return nil
	}
	return &admission.WaitOptions{Timeout: f.timeout}
}
