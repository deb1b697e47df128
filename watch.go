package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/view"
)

// defaultWatch is how often --watch redraws when given no interval, as
// watch(1) does.
const defaultWatch = 2 * time.Second

// watchFlag is --watch [INTERVAL] of list and stats: redraw in place, like
// watch or nvidia-smi -l, until Ctrl-C.
type watchFlag struct {
	on    bool
	every time.Duration
}

func (w *watchFlag) add(cmd *cobra.Command) {
	f := cmd.Flags().VarPF(watchValue{w}, "watch", "w", "redraw every INTERVAL (2s unless given: --watch 5s) until Ctrl-C")
	f.NoOptDefVal = defaultWatch.String()
}

// watchValue is --watch as pflag sets it.
type watchValue struct{ w *watchFlag }

func (v watchValue) String() string {
	if v.w == nil || !v.w.on {
		return ""
	}
	return v.w.interval()
}

// minWatch is the shortest --watch interval.
const minWatch = 100 * time.Millisecond

// Set reads seconds, as watch -n takes them (0.5), or a duration (500ms,
// 5s, 1m).
func (v watchValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if secs, ferr := strconv.ParseFloat(s, 64); ferr == nil && !math.IsNaN(secs) && !math.IsInf(secs, 0) {
		d, err = time.Duration(secs*float64(time.Second)), nil
	}
	switch {
	case err != nil:
		return errors.New("not seconds (2) or a duration (500ms, 5s, 1m)")
	case d < minWatch:
		return fmt.Errorf("more often than every %s", minWatch)
	case d > time.Hour:
		return errors.New("less often than every hour: use cron")
	}
	v.w.on, v.w.every = true, d
	return nil
}

// Type names the value in help.
func (watchValue) Type() string { return "interval" }

// interval is the interval as a person writes it: 2s, 500ms, 1m30s.
func (w *watchFlag) interval() string {
	if w.every%time.Second != 0 {
		return w.every.String()
	}
	return human.FormatDuration(w.every)
}

// args takes no arguments but the interval after a bare --watch: pflag
// reads `--watch 5s` as --watch and an argument 5s. A lone argument there
// is meant as the interval, so a bad one gets the interval's own error.
func (w *watchFlag) args(cmd *cobra.Command, a []string) error {
	if w.on && w.every == defaultWatch && len(a) == 1 {
		if err := (watchValue{w}).Set(a[0]); err != nil {
			return fmt.Errorf("--watch %s: %w", human.Quote(a[0]), err)
		}
		return nil
	}
	return noArgs(cmd, a)
}

// run prints one frame, or with --watch one every interval until the
// command's context ends (Ctrl-C). On a terminal each frame replaces the
// last on the alternate screen, cut to the window, and the screen is put
// back as it was at the end; elsewhere frames follow one another. An error
// in the first frame ends it; later ones are shown in the frame.
func (w *watchFlag) run(cmd *cobra.Command, title string, frame func(io.Writer) error) error {
	out := cmd.OutOrStdout()
	if !w.on {
		return frame(out)
	}
	return view.WatchScreen(cmd.Context(), out, w.every, w.interval(), title, frame)
}
