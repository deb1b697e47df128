package metrics

import (
	"context"
	"fmt"
	"net"

	"golang.org/x/sync/errgroup"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
)

// Server is --metrics at work: the exporter and the socket it
// serves on. A nil *metricsServer is --metrics off.
type Server struct {
	Exporter *Exporter
	ln       net.Listener
}

// Listen listens at addr, so that a port in use is said before the
// monitor starts, with an exporter of opts to serve there.
func Listen(addr string, opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %s", human.Quote(addr), ListenProblem(err))
	}
	return &Server{Exporter: New(opts), ln: ln}, nil
}

// Timed is what the metrics server wraps the ledger in: it times each
// transaction. With --metrics off it is the ledger as it is.
func (s *Server) Timed(l storage.Store) storage.Store {
	if s == nil {
		return l
	}
	return s.Exporter.Timed(l)
}

// URL is where the metrics are served, for the monitor's first line.
func (s *Server) URL() string {
	if s == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String() + "/metrics"
}

// Beside is m with the metrics served beside it, for as long as it runs;
// m itself with --metrics off.
func (s *Server) Beside(m interface{ Run(context.Context) error }, c *core.Client) interface{ Run(context.Context) error } {
	if s == nil {
		return m
	}
	return servedMonitor{m: m, s: s, c: c}
}

// servedMonitor runs m and serves the metrics beside it: when either ends,
// so does the other.
type servedMonitor struct {
	m interface{ Run(context.Context) error }
	s *Server
	c *core.Client
}

// Run runs the monitor and serves the metrics until either ends.
func (w servedMonitor) Run(ctx context.Context) error {
	grp, ctx := errgroup.WithContext(ctx)
	grp.Go(func() error { return w.m.Run(ctx) })
	grp.Go(func() error {
		if err := w.s.Exporter.Serve(ctx, w.s.ln, w.c); err != nil {
			return fmt.Errorf("serve metrics: %w", err)
		}
		return nil
	})
	return grp.Wait()
}
