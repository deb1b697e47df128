package main

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/metrics"
	"github.com/chronos-gpu/chronos/core/monitor"
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

// start checks the flags and listens, so that a bad address or a port in
// use is said before the monitor starts; nil when --metrics is off.
func (f metricsFlags) start(sampleEvery time.Duration) (*metrics.Server, error) {
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
	return metrics.Listen(f.addr, metrics.Options{Compat: compat, SampleEvery: sampleEvery})
}

// observe makes the exporter of s, if any, the monitor's observer.
func observe(s *metrics.Server, o *monitor.Options) {
	if s != nil {
		o.Observer = s.Exporter
	}
}
