package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/tui"
)

// runApp is `chronos`: the terminal app, with the monitor engine running
// inside it so that bookings are enforced whenever anyone has it open.
func runApp(cmd *cobra.Command, g *globals, logPath string) error {
	if !isTerminal(cmd.OutOrStdout()) || !isTerminal(cmd.InOrStdin()) {
		return usageError{errors.New("the app needs a terminal: run it over SSH or in tmux, use `chronos --monitor` to enforce headless, or `chronos list` for scripts")}
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
	var logFile *os.File
	if logPath != "" {
		if logFile, err = os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
			return fmt.Errorf("open log: %w", err)
		}
		defer logFile.Close()
	}
	mps := gpu.DetectMPS("")
	acts := make(chan string, 64)
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	m := core.NewMonitor(c, core.MonitorOptions{Backend: b, Concurrent: mps.Running, OnAct: func(a core.Act) {
		if logFile != nil {
			fmt.Fprintf(logFile, "%s %s\n", a.Time.Local().Format("2006-01-02T15:04:05.000Z07:00"), a)
		}
		select {
		case acts <- a.String():
		default: // the screen is behind; the ledger has the act anyway
		}
	}})
	go m.Run(ctx)
	host, _ := os.Hostname()
	return tui.Run(tui.Options{Client: c, Backend: b, Notice: notice, Mode: modeLabel(mps), Host: host, Acts: acts})
}

// isTerminal says whether f is a terminal; writers and readers that are not
// files (a test's buffer) are not.
func isTerminal(f any) bool {
	fd, ok := f.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(fd.Fd())
}

func modeLabel(m gpu.MPS) string {
	switch {
	case m.Running && m.MultiUser:
		return "concurrent (MPS, multi-user)"
	case m.Running:
		return "concurrent (MPS)"
	}
	return "time-sliced"
}
