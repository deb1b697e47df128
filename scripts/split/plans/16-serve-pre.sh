#!/bin/sh
# Issue 20, step fourteen, before plans/16-serve.txt: what the split tool
# cannot do. Serving metrics leaves the flags: listening at an address
# is listenMetrics, which the plan moves to core/metrics with the server
# (metricsServer); the flags' checks stay. Making the exporter the
# monitor's observer stays with the command layer (metrics does not import
# the monitor): observe becomes a function of it. What runs beside the
# metrics is any Run(ctx), not the command layer's monitorRunner. The act
# log's unknown format is a plain error the command layer makes a usage
# error of, so the act log can go to core/monitor.
set -e
export PATH=/tmp/tools:$PATH
python3 - <<'PY'
def sub(path, old, new, count=1):
    s = open(path).read()
    assert s.count(old) >= max(count, 1), (path, old)
    open(path, 'w').write(s.replace(old, new) if count == 0 else s.replace(old, new, count))

p = 'serve_metrics.go'
sub(p, '''	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %s", human.Quote(f.addr), metrics.ListenProblem(err))
	}
	return &metricsServer{ex: metrics.New(metrics.Options{Compat: compat, SampleEvery: sampleEvery}), ln: ln}, nil
}
''', '''	return listenMetrics(f.addr, metrics.Options{Compat: compat, SampleEvery: sampleEvery})
}

// listenMetrics listens at addr, so that a port in use is said before the
// monitor starts, with an exporter of opts to serve there.
func listenMetrics(addr string, opts metrics.Options) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %s", human.Quote(addr), metrics.ListenProblem(err))
	}
	return &metricsServer{ex: metrics.New(opts), ln: ln}, nil
}
''')
sub(p, '''// observe makes the exporter the monitor's observer.
func (s *metricsServer) observe(o *monitor.Options) {''', '''// observe makes the exporter of s, if any, the monitor's observer.
func observe(s *metricsServer, o *monitor.Options) {''')
sub(p, 'func (s *metricsServer) beside(m monitorRunner, c *core.Client) monitorRunner {',
    'func (s *metricsServer) beside(m interface{ Run(context.Context) error }, c *core.Client) interface{ Run(context.Context) error } {')
sub(p, '''type servedMonitor struct {
	m monitorRunner''', '''// servedMonitor runs m and serves the metrics beside it: when either ends,
// so does the other.
type servedMonitor struct {
	m interface{ Run(context.Context) error }''')
sub(p, 'func (w servedMonitor) Run(', '''// Run runs the monitor and serves the metrics until either ends.
func (w servedMonitor) Run(''')
sub('cmd_app.go', 'g.metrics.observe(&opts)', 'observe(g.metrics, &opts)')
sub('cmd_monitor.go', 'g.metrics.observe(&opts)', 'observe(g.metrics, &opts)')

m = 'cmd_monitor.go'
sub(m, '''	logAct, err := actLogger(cmd.ErrOrStderr(), f.logFormat)
	if err != nil {
		return err
	}''', '''	logAct, err := actLogger(cmd.ErrOrStderr(), f.logFormat)
	if err != nil {
		return usageError{err}
	}''')
sub(m, '''		return nil, usageError{fmt.Errorf("--log-format %s: use text or json", human.Quote(format))}''',
    '''		return nil, fmt.Errorf("--log-format %s: use text or json", human.Quote(format))''')
sub('cmd_monitor_test.go', '''	_, err = actLogger(&out, "xml")
	var usage usageError
	require.ErrorAs(t, err, &usage)''', '''	_, err = actLogger(&out, "xml")
	require.ErrorContains(t, err, `--log-format "xml": use text or json`)''')
PY
goimports -local github.com/chronos-gpu/chronos -w serve_metrics.go cmd_app.go cmd_monitor.go cmd_monitor_test.go
