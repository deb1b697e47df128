package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/tui"
)

// runApp is `chronos`: the terminal app, with the monitor engine running
// inside it so that bookings are enforced whenever anyone has it open.
func runApp(cmd *cobra.Command, g *globals, logPath string, mf metricsFlags) (err error) {
	if !view.IsTerminal(cmd.OutOrStdout()) || !view.IsTerminal(cmd.InOrStdin()) {
		return usageError{errors.New("the app needs a terminal: run it over SSH or in tmux, use `chronos --monitor` to enforce headless, or `chronos list` for scripts")}
	}
	if g.metrics, err = mf.start(0); err != nil {
		return err
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	if _, err := c.Policy(); err != nil {
		return err
	}
	b, notice, err := c.OpenGPUs(g.backendKind())
	if err != nil {
		return err
	}
	defer b.Close()
	logAct := func(monitor.Act) {}
	if logPath != "" {
		logFile, err := storage.OpenAppend(logPath, 0o600)
		if err != nil {
			return fmt.Errorf("open log: %w", err)
		}
		defer func() {
			if cerr := logFile.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("close log: %w", cerr))
			}
		}()
		if logAct, err = monitor.ActLogger(logFile, "text"); err != nil {
			return err
		}
	}
	mps := procfs.DetectMPS("")
	acts := make(chan string, 64)
	show := func(a monitor.Act) {
		logAct(a)
		select {
		case acts <- a.String():
		default: // the screen is behind; the ledger has the act anyway
		}
	}
	// The person's notices (ending soon, idle, reclaimed) the app reads
	// from the audit trail itself, as every app of theirs does.
	opts := monitor.Options{Backend: b, OnAct: show}
	observe(g.metrics, &opts)
	host := c.Host() // its name in a ledger many hosts share
	if host == "" {
		host, _ = os.Hostname()
	}
	mon := g.metrics.Beside(monitor.New(c, opts), c)
	if note, kept := keptByRoot(c); kept {
		mon, notice = noMonitor{}, strings.TrimPrefix(notice+"; "+note, "; ")
	}
	return monitor.Beside(cmd.Context(), mon, func() error {
		return tui.Run(tui.Options{Context: cmd.Context(), Client: c, Writes: writerFor(c), Backend: b, Notice: notice, Mode: mps.Label(), Host: host, Acts: acts,
			SelfArgs: globalArgs(cmd), Out: cmd.OutOrStdout()})
	})
}

// globalArgs are the global flags given (the ledger, the backend), for a
// chronos the app starts to see what it sees.
func globalArgs(cmd *cobra.Command) []string {
	var args []string
	cmd.Root().PersistentFlags().Visit(func(f *pflag.Flag) {
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return args
}
