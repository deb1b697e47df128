package main

import (
	"encoding/json"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// monitorFlags are the flags of headless `chronos --monitor`.
type monitorFlags struct {
	on          bool
	policy      string
	logFormat   string
	sampleEvery time.Duration
}

// runMonitor is `chronos --monitor`: the monitor engine with no screen. It
// runs until the command's context ends (SIGINT or SIGTERM).
func runMonitor(cmd *cobra.Command, g *globals, f monitorFlags) error {
	logger := log.New(cmd.ErrOrStderr(), "", 0)
	logAct := func(a core.Act) {
		if f.logFormat == "json" {
			data, _ := json.Marshal(a)
			logger.Print(string(data))
			return
		}
		logger.Printf("%s %s", a.Time.Local().Format("2006-01-02T15:04:05.000Z07:00"), a)
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return usageError{fmt.Errorf("--log-format %q: use text or json", f.logFormat)}
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	pol, err := c.Policy()
	if err != nil {
		return fmt.Errorf("cannot open the ledger %s: %w", c.Ledger(), err)
	}
	var override *core.Policy
	if f.policy != "" {
		p, err := core.ApplyPolicy(pol, strings.Fields(strings.ReplaceAll(f.policy, ",", " ")))
		if err != nil {
			return err
		}
		override, pol = &p, p
	}
	b, notice, err := c.OpenGPUs(g.backendKind())
	if err != nil {
		return err
	}
	defer b.Close()
	mps := gpu.DetectMPS("")
	start := core.Act{Time: c.Now(), Kind: storage.EventStarted, Detail: fmt.Sprintf("ledger %s, backend %s, mode %s, as %s; policy %s",
		c.Ledger(), b.Name(), mps.Mode(), c.Me().User, core.FormatPolicy(pol))}
	if notice != "" {
		start.Detail += "; " + notice
	}
	logAct(start)
	m := core.NewMonitor(c, core.MonitorOptions{Backend: b, Policy: override, SampleEvery: f.sampleEvery, Concurrent: mps.Running, OnAct: logAct})
	err = m.Run(cmd.Context())
	logAct(core.Act{Time: c.Now(), Kind: storage.EventStopped, Detail: "signal received"})
	return err
}
