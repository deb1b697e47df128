// Package metrics serves what a monitor sees as Prometheus metrics: the
// GPUs' latest reading, the live bookings and each user's GPU-hours from
// the ledger, and how the monitor and the ledger perform. Values are read
// when Prometheus scrapes, never pushed: the ledger in one snapshot
// (snapshot), the GPUs from the reading the monitor took last
// (it tells the Exporter, its monitor.Observer). core stays free of
// HTTP; main wires this in.
package metrics

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
	"github.com/chronos-gpu/chronos/storage"
)

// Compat names a family of metrics kept under another exporter's names.
type Compat string

const (
	// CompatNone: chronos's own metrics only.
	CompatNone Compat = ""
	// CompatDCGM adds each GPU's readings under dcgm-exporter's names, so
	// dashboards made for it chart chronos's hosts too.
	CompatDCGM Compat = "dcgm"
)

// ParseCompat reads --metrics-compat.
func ParseCompat(s string) (Compat, error) {
	switch Compat(s) {
	case CompatNone, CompatDCGM:
		return Compat(s), nil
	}
	return "", errors.New("use dcgm (or leave it out)")
}

// Options configure an Exporter.
type Options struct {
	Compat Compat
	// SampleEvery is how often the monitor reads the GPUs: a reading three
	// times as old is stale, and its metrics are left out.
	SampleEvery time.Duration
	// Clock tells a reading's age; nil means clock.System().
	Clock clock.Clock
}

// Exporter is a monitor's metrics, of this host's GPUs and their bookings. It is the monitor's observer
// (monitor.Options.Observer), times the ledger's transactions (Timed), and
// serves /metrics (Handler, Serve).
type Exporter struct {
	o        Options
	host     string
	registry *prometheus.Registry

	ticks    prometheus.Histogram
	signals  *prometheus.CounterVec
	ledgerTx *prometheus.HistogramVec

	mu      sync.Mutex
	sample  gpu.Sample
	atts    []admission.Attribution
	sampled time.Time
}

// durationBuckets run from 100 µs to about 3 s: a monitor's pass and a
// ledger transaction take a millisecond or so, and a busy ledger seconds.
var durationBuckets = prometheus.ExponentialBuckets(0.0001, 2, 16)

// New returns an Exporter with no reading yet.
func New(o Options) *Exporter {
	if o.SampleEvery <= 0 {
		o.SampleEvery = time.Second
	}
	o.Clock = clock.OrSystem(o.Clock)
	e := &Exporter{o: o, host: setup.HostName(), registry: prometheus.NewRegistry(),
		ticks: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "chronos_monitor_tick_seconds",
			Help: "How long one pass of the monitor took: reading the ledger and the GPUs, acting, recording.", Buckets: durationBuckets}),
		signals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronos_enforcement_signals_total",
			Help: "Signals this monitor sent to GPU processes, by signal and reason (expired, overbudget, unbooked)."}, []string{"signal", "reason"}),
		ledgerTx: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "chronos_ledger_transaction_seconds",
			Help: "How long this process's ledger transactions took, lock wait included, by mode (read or write).", Buckets: durationBuckets}, []string{"mode"}),
	}
	// Every signal and reason starts at zero, so rate() sees the first one.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		for _, why := range []domain.EventKind{domain.EventExpired, domain.EventOverBudget, domain.EventUnbooked} {
			e.signals.WithLabelValues(unix.SignalName(sig), string(why))
		}
	}
	e.registry.MustRegister(e.ticks, e.signals, e.ledgerTx, gpuCollector{e},
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	return e
}

// Ticked implements monitor.Observer.
func (e *Exporter) Ticked(took time.Duration) { e.ticks.Observe(took.Seconds()) }

// Sampled implements monitor.Observer: the reading the GPU metrics show.
func (e *Exporter) Sampled(s gpu.Sample, atts []admission.Attribution) {
	e.mu.Lock()
	e.sample, e.atts, e.sampled = s, atts, e.o.Clock.Now()
	e.mu.Unlock()
}

// Signalled implements monitor.Observer.
func (e *Exporter) Signalled(sig syscall.Signal, cause domain.EventKind) {
	e.signals.WithLabelValues(unix.SignalName(sig), string(cause)).Inc()
}

// latest is the monitor's last reading, unless it is stale.
func (e *Exporter) latest() (gpu.Sample, []admission.Attribution, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fresh := !e.sampled.IsZero() && clock.Since(e.o.Clock, e.sampled) < 3*e.o.SampleEvery
	return e.sample, e.atts, fresh
}

// Timed returns s with each transaction's duration observed. It keeps
// what else s offers that chronos asks a store about: a ledger many hosts
// share (storage.Presence), and whether a file is this user's alone.
func (e *Exporter) Timed(s storage.Store) storage.Store {
	t := timedStore{Store: s, h: e.ledgerTx}
	if p, ok := s.(storage.Presence); ok {
		return timedSharedStore{timedStore: t, Presence: p}
	}
	return t
}

type timedStore struct {
	storage.Store
	h *prometheus.HistogramVec
}

type timedSharedStore struct {
	timedStore
	storage.Presence
}

// Private is the store's own answer; a store that cannot say is not
// private.
func (s timedStore) Private() bool {
	p, ok := s.Store.(interface{ Private() bool })
	return ok && p.Private()
}

func (s timedStore) View(ctx context.Context, fn func(*storage.Tx) error) error {
	defer s.since(clock.Kernel.Now(), "read")
	return s.Store.View(ctx, fn)
}

func (s timedStore) Update(ctx context.Context, fn func(*storage.Tx) error) error {
	defer s.since(clock.Kernel.Now(), "write")
	return s.Store.Update(ctx, fn)
}

// since observes how long a transaction took: a measurement, on the
// kernel's clock.
func (s timedStore) since(began time.Time, mode string) {
	s.h.WithLabelValues(mode).Observe(clock.Since(clock.Kernel, began).Seconds())
}

// Handler serves the metrics, reading the ledger through c on each
// scrape. Call it once.
func (e *Exporter) Handler(c *core.Client) http.Handler {
	totals := &report.UserTotals{}
	if c.Host() != "" {
		// A ledger many hosts share: each host serves its own GPUs'
		// bookings, so that summing the hosts sums the lab.
		totals.Keep = c.OnThisHost
	}
	e.registry.MustRegister(ledgerCollector{e: e, c: c, totals: totals})
	return promhttp.HandlerFor(e.registry, promhttp.HandlerOpts{
		// A ledger busy past its timeout costs its metrics, not the
		// GPUs' or the monitor's.
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
}

// Serve serves /metrics on ln until ctx ends.
func (e *Exporter) Serve(ctx context.Context, ln net.Listener, c *core.Client) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.Handler(c))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("chronos: metrics are at /metrics\n"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// gpuLabels name one GPU as dcgm-exporter does (modelName aside).
var gpuLabels = []string{"gpu", "UUID", "hostname"}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// The metrics read from the monitor's latest reading of the GPUs.
var (
	unbookedMemory = desc("chronos_gpu_unbooked_memory_bytes", "GPU memory held by processes with no live booking.", gpuLabels...)
	bookingUsed    = desc("chronos_booking_memory_used_bytes", "GPU memory the booking's processes hold.", "booking")
	dcgmLabels     = []string{"gpu", "UUID", "modelName", "hostname"}
	dcgmUtil       = desc("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", dcgmLabels...)
	dcgmUsed       = desc("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", dcgmLabels...)
	dcgmFree       = desc("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", dcgmLabels...)
	dcgmPower      = desc("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", dcgmLabels...)
	dcgmTemp       = desc("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", dcgmLabels...)
)

// gpuCollector reports the monitor's latest reading.
type gpuCollector struct{ e *Exporter }

func (g gpuCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- unbookedMemory
	ch <- bookingUsed
	if g.e.o.Compat == CompatDCGM {
		for _, d := range []*prometheus.Desc{dcgmUtil, dcgmUsed, dcgmFree, dcgmPower, dcgmTemp} {
			ch <- d
		}
	}
}

func (g gpuCollector) Collect(ch chan<- prometheus.Metric) {
	s, atts, ok := g.e.latest()
	if !ok {
		return
	}
	unbooked := map[int]float64{}
	used := map[uint64]float64{}
	for _, a := range atts {
		switch a.Verdict {
		case admission.Unbooked, admission.Ended:
			unbooked[a.Device] += float64(a.MemoryUsed)
		case admission.Booked, admission.OverBudget:
			used[a.Partition] += float64(a.MemoryUsed)
		}
	}
	for _, d := range s.Devices {
		idx := strconv.Itoa(d.Index)
		ch <- prometheus.MustNewConstMetric(unbookedMemory, prometheus.GaugeValue, unbooked[d.Index], idx, d.UUID, g.e.host)
		if g.e.o.Compat != CompatDCGM {
			continue
		}
		gauge := func(desc *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, idx, d.UUID, d.Name, g.e.host)
		}
		if d.Util != procfs.NA {
			gauge(dcgmUtil, float64(d.Util))
		}
		gauge(dcgmUsed, mib(d.MemoryUsed))
		gauge(dcgmFree, mib(d.MemoryFree))
		if d.PowerW >= 0 {
			gauge(dcgmPower, d.PowerW)
		}
		if d.TempC != procfs.NA {
			gauge(dcgmTemp, float64(d.TempC))
		}
	}
	for id, b := range used {
		ch <- prometheus.MustNewConstMetric(bookingUsed, prometheus.GaugeValue, b, strconv.FormatUint(id, 10))
	}
}

// mib is b in whole MiB, rounded down, as dcgm-exporter prints them.
func mib(b uint64) float64 { return float64(b >> 20) }

// The metrics read from the ledger.
var (
	bookedRatio     = desc("chronos_gpu_booked_ratio", "Share of the GPU's memory that live bookings hold (0 to 1).", gpuLabels...)
	bookingInfo     = desc("chronos_booking_info", "A live booking: its owner, GPU and host (always 1).", "booking", "user", "gpu", "UUID", "hostname")
	bookingLeft     = desc("chronos_booking_remaining_seconds", "Time the live booking has left.", "booking")
	bookingLimit    = desc("chronos_booking_memory_limit_bytes", "GPU memory the live booking holds.", "booking")
	bookingIdle     = desc("chronos_booking_idle_seconds", "How long monitors have seen the live booking do no GPU work (0 while it works).", "booking")
	userBooked      = desc("chronos_user_booked_gpu_seconds_total", "Share-weighted GPU time the user's bookings have held (50% of a GPU for a second is 0.5).", "user")
	userUsed        = desc("chronos_user_used_gpu_seconds_total", "GPU time the user's booked processes have used, as monitors measured it.", "user")
	userUnbookedUse = desc("chronos_user_unbooked_gpu_seconds_total", "GPU time the user's processes have used with no booking.", "user")
	queueRequests   = desc("chronos_queue_requests", `Requests waiting in line for the GPU ("any": for the first of the host's GPUs with room).`, "gpu", "hostname")
)

// ledgerCollector reports the live bookings and each user's totals.
type ledgerCollector struct {
	e      *Exporter
	c      *core.Client
	totals *report.UserTotals
}

func (l ledgerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{bookedRatio, bookingInfo, bookingLeft, bookingLimit, bookingIdle, userBooked, userUsed, userUnbookedUse, queueRequests} {
		ch <- d
	}
}

func (l ledgerCollector) Collect(ch chan<- prometheus.Metric) {
	if err := l.collect(ch); err != nil {
		ch <- prometheus.NewInvalidMetric(bookedRatio, err)
	}
}

func (l ledgerCollector) collect(ch chan<- prometheus.Metric) error {
	snap, err := snapshot(l.c, l.totals)
	if err != nil {
		return err
	}
	inv, now, waiting, host := snap.Inventory, snap.Now, snap.Waiting, l.e.host
	booked := map[int]int64{}
	for _, p := range snap.Live {
		if !l.c.OnThisHost(p.Partition) || !p.LiveAt(now) { // one booked ahead holds nothing yet
			continue
		}
		id := strconv.FormatUint(p.ID, 10)
		for _, d := range p.GPUs() { // a row per GPU of the booking
			booked[d] += p.SharePPM
			ch <- prometheus.MustNewConstMetric(bookingInfo, prometheus.GaugeValue, 1, id, p.User, strconv.Itoa(d), p.On(d).DeviceUUID, host)
		}
		ch <- prometheus.MustNewConstMetric(bookingLeft, prometheus.GaugeValue, p.Expires.Sub(now).Seconds(), id)
		ch <- prometheus.MustNewConstMetric(bookingLimit, prometheus.GaugeValue, float64(p.Bytes), id)
		ch <- prometheus.MustNewConstMetric(bookingIdle, prometheus.GaugeValue, domain.IdleFor(p.Partition, p.Usage, now).Seconds(), id)
	}
	for _, d := range inv.Devices {
		ch <- prometheus.MustNewConstMetric(bookedRatio, prometheus.GaugeValue, human.ShareOf(booked[d.Index]), strconv.Itoa(d.Index), d.UUID, host)
	}
	// Every GPU's series, at 0 when nobody waits, so a chart has no gaps;
	// then any GPU no longer in the inventory that someone still waits for.
	queue := func(dev int) {
		gpu := strconv.Itoa(dev)
		if dev == domain.AnyDevice {
			gpu = "any"
		}
		ch <- prometheus.MustNewConstMetric(queueRequests, prometheus.GaugeValue, float64(waiting[dev]), gpu, host)
		delete(waiting, dev)
	}
	queue(domain.AnyDevice)
	for _, d := range inv.Devices {
		queue(d.Index)
	}
	for dev := range waiting {
		queue(dev)
	}
	for _, row := range snap.Totals {
		ch <- prometheus.MustNewConstMetric(userBooked, prometheus.CounterValue, row.BookedHours*3600, row.Key)
		ch <- prometheus.MustNewConstMetric(userUsed, prometheus.CounterValue, row.UsedHours*3600, row.Key)
		if l.totals.Keep == nil {
			ch <- prometheus.MustNewConstMetric(userUnbookedUse, prometheus.CounterValue, *row.UnbookedHours*3600, row.Key)
		}
	}
	return nil
}
