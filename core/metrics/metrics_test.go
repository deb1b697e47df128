package metrics_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/metrics"
	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// rig is a ledger on four simulated GPUs (the fourth without made-up load),
// a monitor running on it with the exporter as its observer, and /metrics
// served on a loopback port.
type rig struct {
	t   *testing.T
	sim *gpu.Sim
	c   *core.Client
	ex  *metrics.Exporter
	url string
}

func newRig(t *testing.T, compat metrics.Compat) *rig {
	t.Helper()
	sim := gpu.NewSim(gpu.SimOptions{Count: 4})
	ex := metrics.New(metrics.Options{Compat: compat})
	me := proc.CurrentIdentity()
	c := core.NewClient(core.Options{Ledger: ex.Timed(bolt.New(filepath.Join(t.TempDir(), "chronos.db"))), As: &me,
		Devices: func() (core.Listing, error) {
			devs, err := sim.Devices()
			return core.Listing{Backend: sim.Name(), Devices: devs}, err
		}})
	return &rig{t: t, sim: sim, c: c, ex: ex}
}

// start runs the monitor and serves the metrics on a loopback port until
// the test ends.
func (r *rig) start() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(r.t, err)
	r.url = "http://" + ln.Addr().String() + "/metrics"
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	m := monitor.New(r.c, monitor.Options{Backend: r.sim, Observer: r.ex, SampleEvery: 100 * time.Millisecond})
	go func() { m.Run(ctx); done <- struct{}{} }()
	go func() { _ = r.ex.Serve(ctx, ln, r.c); done <- struct{}{} }()
	r.t.Cleanup(func() { stop(); <-done; <-done })
}

func (r *rig) book(device int, share float64, d time.Duration) *core.Partition {
	r.t.Helper()
	p, err := r.c.Create(core.Request{Device: device, Memory: human.Fraction(share), Duration: d})
	require.NoError(r.t, err)
	return p
}

// process starts `sleep` (as uid, when not zero) naming booking in its
// environment (none: 0) and shows it on device holding memory.
func (r *rig) process(device int, memory uint64, booking uint64, uid uint32) *exec.Cmd {
	r.t.Helper()
	cmd := exec.Command("sleep", "600")
	if booking != 0 {
		cmd.Env = append(os.Environ(), procfs.BookingEnv+"="+strconv.FormatUint(booking, 10))
	}
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	}
	require.NoError(r.t, cmd.Start())
	r.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	require.Eventually(r.t, func() bool {
		info, err := procfs.ReadProc(cmd.Process.Pid)
		return err == nil && info.Command == "sleep 600"
	}, 2*time.Second, 5*time.Millisecond)
	r.sim.Attach(device, cmd.Process.Pid, memory)
	return cmd
}

// scrape reads /metrics over HTTP as Prometheus does.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// series are a family's samples by their labels, written name=value,…
// in name order.
func series(fam *dto.MetricFamily) map[string]*dto.Metric {
	out := map[string]*dto.Metric{}
	if fam == nil {
		return out
	}
	for _, m := range fam.Metric {
		var labels []string
		for _, l := range m.Label {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		out[strings.Join(labels, ",")] = m
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m == nil:
		return -1
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return -1
}

// A running monitor's /metrics, read over HTTP, says what the ledger and the
// GPUs say: every live booking with its owner, GPU, time left, memory and
// use; each GPU's booked share and unbooked memory; the users' totals; the
// signals sent; and how long passes and transactions took.
func TestScrapeAgreesWithTheLedger(t *testing.T) {
	t.Parallel()
	r := newRig(t, metrics.CompatDCGM)
	first := r.book(3, 0.5, time.Hour)
	second := r.book(3, 0.25, 2*time.Hour)
	r.book(0, 0.1, 30*time.Minute)
	ending := r.book(3, 0.125, 2*time.Second)
	r.process(3, 3<<19, second.ID, 0) // 1.5 MiB
	r.process(3, 2<<30, first.ID, 0)
	stopped := r.process(3, 1<<30, ending.ID, 0)
	r.process(3, 3<<30, 0, 65534) // nobody's, with no booking: warned, not stopped
	r.start()

	// The booking that ends takes its process with it: SIGTERM at expiry.
	exited := make(chan struct{})
	go func() { _ = stopped.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the expired booking's process was never stopped")
	}
	var fams map[string]*dto.MetricFamily
	require.Eventually(t, func() bool { // until a reading without it
		fams = scrape(t, r.url)
		return value(series(fams["chronos_gpu_unbooked_memory_bytes"])[gpuLabels(r, 3)]) == 3<<30
	}, 5*time.Second, 50*time.Millisecond)

	// A booking made ahead holds nothing yet: no series, nothing booked.
	ahead, err := r.c.Create(core.Request{Device: 0, Memory: human.Fraction(0.5), Duration: time.Hour, Start: r.c.Now().Add(time.Hour)})
	require.NoError(t, err)

	before, err := report.Read(r.c, time.Time{}, report.ByUser)
	require.NoError(t, err)
	fams = scrape(t, r.url)
	after, err := report.Read(r.c, time.Time{}, report.ByUser)
	require.NoError(t, err)
	now := r.c.Now()
	live, err := r.c.List(false)
	require.NoError(t, err)
	live = slices.DeleteFunc(live, func(p core.Partition) bool { return p.ID == ahead.ID })
	require.Len(t, live, 3)
	host := setup.HostName()

	info := series(fams["chronos_booking_info"])
	require.Len(t, info, len(live), "ended bookings drop out")
	for _, p := range live {
		id := strconv.FormatUint(p.ID, 10)
		labels := "UUID=" + p.DeviceUUID + ",booking=" + id + ",gpu=" + strconv.Itoa(p.Device) + ",hostname=" + host + ",user=" + p.User
		require.Equal(t, 1.0, value(info[labels]), labels)
		left := value(series(fams["chronos_booking_remaining_seconds"])["booking="+id])
		require.InDelta(t, p.Expires.Sub(now).Seconds(), left, 2)
		require.Equal(t, float64(p.Bytes), value(series(fams["chronos_booking_memory_limit_bytes"])["booking="+id]))
		require.Equal(t, 0.0, value(series(fams["chronos_booking_idle_seconds"])["booking="+id]))
	}
	require.Equal(t, float64(2<<30), value(series(fams["chronos_booking_memory_used_bytes"])["booking="+strconv.FormatUint(first.ID, 10)]))

	booked := series(fams["chronos_gpu_booked_ratio"])
	require.Len(t, booked, 4)
	for dev, want := range []float64{0.1, 0, 0, 0.75} {
		require.InDelta(t, want, value(booked[gpuLabels(r, dev)]), 1e-9, "GPU %d", dev)
	}

	me := proc.CurrentIdentity().User
	total := value(series(fams["chronos_user_booked_gpu_seconds_total"])["user="+me])
	require.GreaterOrEqual(t, total, before.Rows[0].BookedHours*3600)
	require.LessOrEqual(t, total, after.Rows[0].BookedHours*3600)
	require.Equal(t, prometheusCounter, fams["chronos_user_booked_gpu_seconds_total"].GetType().String())
	require.Contains(t, series(fams["chronos_user_used_gpu_seconds_total"]), "user="+me)

	require.Equal(t, 1.0, value(series(fams["chronos_enforcement_signals_total"])["reason=expired,signal=SIGTERM"]))
	require.Equal(t, 0.0, value(series(fams["chronos_enforcement_signals_total"])["reason=unbooked,signal=SIGTERM"]))
	require.Positive(t, fams["chronos_monitor_tick_seconds"].Metric[0].Histogram.GetSampleCount())
	tx := series(fams["chronos_ledger_transaction_seconds"])
	require.Positive(t, tx["mode=read"].Histogram.GetSampleCount())
	require.Positive(t, tx["mode=write"].Histogram.GetSampleCount())

	// dcgm-exporter's names carry the reading the monitor judged.
	for _, name := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP"} {
		require.Len(t, fams[name].GetMetric(), 4, name)
	}
	used := series(fams["DCGM_FI_DEV_FB_USED"])["UUID=SIM-00000000-0000-0000-0000-000000000003,gpu=3,hostname="+host+",modelName=Simulated H100 80GB"]
	// In whole MiB, rounded down, as dcgm-exporter prints them.
	require.Equal(t, float64(5<<10+1), value(used), "GPU 3 holds 2 GiB and 1.5 MiB booked and 3 GiB unbooked")
	free := series(fams["DCGM_FI_DEV_FB_FREE"])["UUID=SIM-00000000-0000-0000-0000-000000000003,gpu=3,hostname="+host+",modelName=Simulated H100 80GB"]
	require.Equal(t, float64(75<<10-2), value(free), "80 GiB less 5 GiB and 1.5 MiB")
}

const prometheusCounter = "COUNTER"

func gpuLabels(r *rig, dev int) string {
	host := setup.HostName()
	devs, err := r.sim.Devices()
	require.NoError(r.t, err)
	return "UUID=" + devs[dev].UUID + ",gpu=" + strconv.Itoa(dev) + ",hostname=" + host
}

// Without --metrics-compat dcgm, no DCGM names; before the monitor's first
// reading, no GPU readings at all, and the ledger's metrics still served.
func TestNoCompatNoReadingYet(t *testing.T) {
	t.Parallel()
	r := newRig(t, metrics.CompatNone)
	r.book(1, 0.5, time.Hour)
	srv := http.Server{Handler: r.ex.Handler(r.c), ReadHeaderTimeout: time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	fams := scrape(t, "http://"+ln.Addr().String()+"/metrics")
	for name := range fams {
		require.False(t, strings.HasPrefix(name, "DCGM_"), name)
	}
	require.NotContains(t, fams, "chronos_gpu_unbooked_memory_bytes")
	require.Len(t, fams["chronos_booking_info"].GetMetric(), 1)
	require.Equal(t, 0.5, value(series(fams["chronos_gpu_booked_ratio"])[gpuLabels(r, 1)]))

	_, err = metrics.ParseCompat("nvitop")
	require.Error(t, err)
}

// The Grafana dashboard in contrib/ is valid JSON and charts only metrics
// that the exporter serves.
func TestDashboardChartsOnlyMetricsThatExist(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../contrib/grafana-dashboard.json")
	require.NoError(t, err)
	var dash map[string]any
	require.NoError(t, json.Unmarshal(raw, &dash))

	r := newRig(t, metrics.CompatDCGM)
	p := r.book(3, 0.5, time.Hour)
	r.process(3, 1<<30, p.ID, 0)
	r.start()
	var served map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		served = scrape(t, r.url)
		return served["chronos_booking_memory_used_bytes"] != nil
	}, 5*time.Second, 50*time.Millisecond)

	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "query") {
					exprs = append(exprs, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	require.NotEmpty(t, exprs)
	names := regexp.MustCompile(`\b(chronos_[a-z_]+|DCGM_FI_[A-Z_]+)\b`)
	charted := map[string]bool{}
	for _, e := range exprs {
		for _, name := range names.FindAllString(e, -1) {
			family := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if f := strings.TrimSuffix(name, suffix); served[f].GetType() == dto.MetricType_HISTOGRAM {
					family = f
				}
			}
			require.NotNil(t, served[family], "the dashboard charts %s, which is not served", name)
			charted[family] = true
		}
	}
	// …and it charts every one of chronos's own.
	for name := range served {
		if strings.HasPrefix(name, "chronos_") {
			require.True(t, charted[name], "the dashboard does not chart %s", name)
		}
	}
}

// A scrape reads the ledger in one read transaction, a snapshot whose
// bookings, line and totals agree; on etcd each costs round trips.
func TestScrapeReadsTheLedgerOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, metrics.CompatNone)
	p := r.book(1, 1, time.Hour) // the GPU full, so the next waits
	_, e, err := r.c.Enqueue(core.Request{Device: 1, Memory: human.Fraction(0.5), Duration: time.Hour}, admission.WaitOptions{})
	require.NoError(t, err)
	require.NotNil(t, e)
	// A second exporter times the scrape's transactions, and nothing else.
	counter := metrics.New(metrics.Options{})
	me := r.c.Me()
	c := core.NewClient(core.Options{Ledger: counter.Timed(r.c.Ledger()), As: &me})
	srv := httptest.NewServer(r.ex.Handler(c))
	t.Cleanup(srv.Close)
	counted := httptest.NewServer(counter.Handler(r.c))
	t.Cleanup(counted.Close)

	fams := scrape(t, srv.URL)
	tx := series(scrape(t, counted.URL)["chronos_ledger_transaction_seconds"])
	require.Equal(t, uint64(1), tx["mode=read"].GetHistogram().GetSampleCount(), "read transactions in one scrape")
	require.Zero(t, tx["mode=write"].GetHistogram().GetSampleCount(), "write transactions in one scrape")
	info := "UUID=" + p.DeviceUUID + ",booking=" + strconv.FormatUint(p.ID, 10) + ",gpu=1,hostname=" + setup.HostName() + ",user=" + me.User
	require.Equal(t, 1.0, value(series(fams["chronos_booking_info"])[info]))
	require.Equal(t, 1.0, value(series(fams["chronos_queue_requests"])["gpu=1,hostname="+setup.HostName()]))
	require.Equal(t, 1.0, value(series(fams["chronos_gpu_booked_ratio"])[gpuLabels(r, 1)]))
	require.Contains(t, series(fams["chronos_user_booked_gpu_seconds_total"]), "user="+me.User)
}

// A booking of several GPUs has a row of chronos_booking_info for each of
// its GPUs, and its share counts in each GPU's booked ratio.
func TestBookingOfSeveralGPUsHasARowPerGPU(t *testing.T) {
	t.Parallel()
	r := newRig(t, metrics.CompatNone)
	p, err := r.c.Create(core.Request{Device: 1, Devices: []int{1, 2}, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	r.start()
	fams := scrape(t, r.url)
	info := series(fams["chronos_booking_info"])
	require.Len(t, info, 2)
	host, id := setup.HostName(), strconv.FormatUint(p.ID, 10)
	for i, g := range []int{1, 2} {
		labels := "UUID=" + p.DeviceUUIDs[i] + ",booking=" + id + ",gpu=" + strconv.Itoa(g) + ",hostname=" + host + ",user=" + p.User
		require.Equal(t, 1.0, value(info[labels]), labels)
	}
	booked := series(fams["chronos_gpu_booked_ratio"])
	for dev, want := range []float64{0, 0.5, 0.5, 0} {
		require.InDelta(t, want, value(booked[gpuLabels(r, dev)]), 1e-9, "GPU %d", dev)
	}
}
