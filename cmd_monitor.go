package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu/procfs"
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
func runMonitor(cmd *cobra.Command, g *globals, f monitorFlags, mf metricsFlags) error {
	logAct, err := monitor.ActLogger(cmd.ErrOrStderr(), f.logFormat)
	if err != nil {
		return usageError{err}
	}
	if g.metrics, err = mf.start(f.sampleEvery); err != nil {
		return err
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	pol, err := c.Policy()
	if err != nil {
		return fmt.Errorf("cannot open the ledger %s: %w", c.Ledger(), err)
	}
	var override *domain.Policy
	if f.policy != "" {
		if _, _, found, _ := notice.NotifySetting(policy.Split(f.policy)); found {
			return usageError{fmt.Errorf("--policy notify-url=…: the webhook is root's file %s; set it with sudo chronos policy set notify-url=…", notice.NotifyFile())}
		}
		p, err := policy.Apply(pol, policy.Split(f.policy))
		if err != nil {
			return err
		}
		override, pol = &p, p
	}
	stopKeeper, keeping, err := serveKeeper(cmd.Context(), c, logAct)
	if err != nil {
		return err
	}
	if cfg, err := g.storeConfig(); err == nil && keeping != "" {
		keeping += keyWarning(cfg)
	}
	defer stopKeeper()
	b, notice, err := c.OpenGPUs(g.backendKind())
	if err != nil {
		return err
	}
	defer b.Close()
	mps := procfs.DetectMPS("")
	start := monitor.Act{Time: c.Now(), Kind: domain.EventStarted, Detail: fmt.Sprintf("ledger %s, backend %s, mode %s, as %s; policy %s",
		c.Ledger(), b.Name(), mps.Label(), c.Me().User, policy.Format(pol))}
	for _, n := range []string{notice, keeping} {
		if n != "" {
			start.Detail += "; " + n
		}
	}
	if url := g.metrics.URL(); url != "" {
		start.Detail += "; metrics at " + url
	}
	logAct(start)
	opts := monitor.Options{Backend: b, Policy: override, SampleEvery: f.sampleEvery, OnAct: logAct}
	observe(g.metrics, &opts)
	err = g.metrics.Beside(monitor.New(c, opts), c).Run(cmd.Context())
	logAct(monitor.Act{Time: c.Now(), Kind: domain.EventStopped, Detail: "signal received"})
	return err
}
