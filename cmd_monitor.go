package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
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
	logAct, err := actLogger(cmd.ErrOrStderr(), f.logFormat)
	if err != nil {
		return err
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
	if url := g.metrics.url(); url != "" {
		start.Detail += "; metrics at " + url
	}
	logAct(start)
	opts := monitor.Options{Backend: b, Policy: override, SampleEvery: f.sampleEvery, OnAct: logAct}
	g.metrics.observe(&opts)
	err = g.metrics.beside(monitor.New(c, opts), c).Run(cmd.Context())
	logAct(monitor.Act{Time: c.Now(), Kind: domain.EventStopped, Detail: "signal received"})
	return err
}

// actLogger writes one line per monitor act to w through log/slog: "text"
// (key=value) or "json", both with the fields scripts read — time, kind,
// partition, user, uid, pid, detail, as monitor.Act's JSON has them — and a level (ERROR for errors, WARN for
// signals refused, INFO otherwise). time is when the act happened.
func actLogger(w io.Writer, format string) (func(monitor.Act), error) {
	opts := &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.MessageKey {
			a.Key = "detail"
		}
		return a
	}}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, usageError{fmt.Errorf("--log-format %s: use text or json", human.Quote(format))}
	}
	return func(a monitor.Act) {
		level := slog.LevelInfo
		switch a.Kind {
		case domain.EventError:
			level = slog.LevelError
		case domain.EventDenied, domain.EventClock:
			level = slog.LevelWarn
		}
		r := slog.NewRecord(a.Time, level, a.Detail, 0)
		r.AddAttrs(slog.String("kind", string(a.Kind)))
		if a.Partition != 0 {
			// partition is booking's old name, kept for old scripts.
			r.AddAttrs(slog.Uint64("booking", a.Partition), slog.Uint64("partition", a.Partition))
		}
		if a.User != "" {
			r.AddAttrs(slog.String("user", a.User))
		}
		if a.UID != 0 {
			r.AddAttrs(slog.Int("uid", a.UID))
		}
		if a.PID != 0 {
			r.AddAttrs(slog.Int("pid", a.PID))
		}
		// A log that cannot be written (a closed stderr) must not stop
		// the monitor; the ledger holds every act anyway.
		_ = h.Handle(context.Background(), r)
	}, nil
}
