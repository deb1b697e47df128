package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/metrics"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/storage"
)

// metricsFlags are --metrics and --metrics-compat, of the app and of
// `chronos --monitor`.
type metricsFlags struct {
	addr, compat string
}

func (f *metricsFlags) add(flags *pflag.FlagSet) {
	flags.StringVar(&f.addr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9400 (off unless given)")
	flags.StringVar(&f.compat, "metrics-compat", "", "with --metrics: dcgm also serves each GPU's readings under dcgm-exporter's names")
}

// metricsServer is --metrics at work: the exporter and the socket it
// serves on. A nil *metricsServer is --metrics off.
type metricsServer struct {
	ex *metrics.Exporter
	ln net.Listener
}

// start checks the flags and listens, so that a bad address or a port in
// use is said before the monitor starts; nil when --metrics is off.
func (f metricsFlags) start(sampleEvery time.Duration) (*metricsServer, error) {
	compat, err := metrics.ParseCompat(f.compat)
	if err != nil {
		return nil, usageError{fmt.Errorf("--metrics-compat %s: %w", human.Quote(f.compat), err)}
	}
	if f.addr == "" {
		if compat != metrics.CompatNone {
			return nil, usageError{errors.New("--metrics-compat needs --metrics ADDR")}
		}
		return nil, nil
	}
	if _, port, err := net.SplitHostPort(f.addr); err != nil || port == "" {
		return nil, usageError{fmt.Errorf("--metrics %s: give HOST:PORT, such as 127.0.0.1:9400 (:9400 for every address)", human.Quote(f.addr))}
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %s", human.Quote(f.addr), metrics.ListenProblem(err))
	}
	return &metricsServer{ex: metrics.New(metrics.Options{Compat: compat, SampleEvery: sampleEvery}), ln: ln}, nil
}

// timed is what the metrics server wraps the ledger in: it times each
// transaction. With --metrics off it is the ledger as it is.
func (s *metricsServer) timed(l storage.Store) storage.Store {
	if s == nil {
		return l
	}
	return s.ex.Timed(l)
}

// observe makes the exporter the monitor's observer.
func (s *metricsServer) observe(o *monitor.Options) {
	if s != nil {
		o.Observer = s.ex
	}
}

// url is where the metrics are served, for the monitor's first line.
func (s *metricsServer) url() string {
	if s == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String() + "/metrics"
}

// beside is m with the metrics served beside it, for as long as it runs;
// m itself with --metrics off.
func (s *metricsServer) beside(m monitorRunner, c *core.Client) monitorRunner {
	if s == nil {
		return m
	}
	return servedMonitor{m: m, s: s, c: c}
}

type servedMonitor struct {
	m monitorRunner
	s *metricsServer
	c *core.Client
}

func (w servedMonitor) Run(ctx context.Context) error {
	grp, ctx := errgroup.WithContext(ctx)
	grp.Go(func() error { return w.m.Run(ctx) })
	grp.Go(func() error {
		if err := w.s.ex.Serve(ctx, w.s.ln, w.c); err != nil {
			return fmt.Errorf("serve metrics: %w", err)
		}
		return nil
	})
	return grp.Wait()
}
