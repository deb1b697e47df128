package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/monitor"
	"github.com/chronos-gpu/chronos/core/view"
)

// A bad --metrics says what is wrong before anything starts.
func TestMetricsFlagsRefuseBadInput(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = taken.Close() }()
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--monitor", "--metrics", "9400"}, exitUsage, `--metrics "9400": give HOST:PORT, such as 127.0.0.1:9400`},
		{[]string{"--monitor", "--metrics", "127.0.0.1:"}, exitUsage, "give HOST:PORT"},
		{[]string{"--monitor", "--metrics", ":9400", "--metrics-compat", "nvitop"}, exitUsage, `--metrics-compat "nvitop": use dcgm`},
		{[]string{"--monitor", "--metrics-compat", "dcgm"}, exitUsage, "--metrics-compat needs --metrics ADDR"},
		{[]string{"--monitor", "--metrics", taken.Addr().String()}, exitError, "the address is in use"},
		{[]string{"--monitor", "--metrics", "192.0.2.1:9400"}, exitError, "this machine has no such address"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := cli(t, db, tc.args...)
			require.Equal(t, tc.code, r.code, r.stderr)
			require.Contains(t, r.stderr, tc.msg)
		})
	}
}

// scrapeText reads /metrics as text.
func scrapeText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// bookingInfo is each booking's chronos_booking_info line, by id.
func bookingInfo(text string) map[uint64]string {
	out := map[uint64]string{}
	for _, m := range regexp.MustCompile(`(?m)^chronos_booking_info\{(.*booking="(\d+)".*)\} 1$`).FindAllStringSubmatch(text, -1) {
		id, _ := strconv.ParseUint(m[2], 10, 64)
		out[id] = m[1]
	}
	return out
}

// metricsMonitor starts the real `chronos --monitor --metrics 127.0.0.1:0`
// with env and more flags, until the test ends, and returns it and the
// address its first line says it serves at.
func metricsMonitor(t *testing.T, env []string, flags ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(chronosBin, append([]string{"--monitor", "--log-format", "json", "--metrics", "127.0.0.1:0"}, flags...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	require.True(t, sc.Scan())
	var started monitor.Act
	require.NoError(t, json.Unmarshal(sc.Bytes(), &started))
	url := regexp.MustCompile(`metrics at (http://\S+/metrics)`).FindStringSubmatch(started.Detail)
	require.NotNil(t, url, started.Detail)
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return cmd, url[1]
}

// The real `chronos --monitor --metrics` serves the live bookings, says
// where in its first line, and stops serving when it stops.
func TestMonitorServesMetrics(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "0", "0.5", "1h").code)
	require.Equal(t, 0, cli(t, db, "create", "1", "25%", "2h").code)
	require.Equal(t, 0, cli(t, db, "release", "1").code)
	require.Equal(t, 0, cli(t, db, "create", "1", "10%", "3h").code)

	cmd, url := metricsMonitor(t, binEnv(db), "--metrics-compat", "dcgm")
	var text string
	require.Eventually(t, func() bool { // the first reading of the GPUs
		text = scrapeText(t, url)
		return strings.Contains(text, "DCGM_FI_DEV_GPU_UTIL{")
	}, patience, 50*time.Millisecond)
	info := bookingInfo(text)
	live := listJSON(t, db)
	require.Len(t, info, len(live))
	for _, p := range live {
		require.Contains(t, info[p.ID], `user="`+p.Owner+`"`)
		require.Contains(t, info[p.ID], `gpu="`+strconv.Itoa(p.Device)+`"`)
		require.Contains(t, info[p.ID], `UUID="`+p.DeviceUUID+`"`)
		require.Regexp(t, `(?m)^chronos_booking_memory_limit_bytes\{booking="`+strconv.FormatUint(p.ID, 10)+`"\} `+regexp.QuoteMeta(strconv.FormatFloat(float64(p.Bytes), 'e', -1, 64))+`$`, text)
	}
	require.Regexp(t, `(?m)^chronos_gpu_booked_ratio\{UUID="[^"]+",gpu="1",hostname="[^"]+"\} 0.35$`, text)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
	_, err := http.Get(url)
	require.Error(t, err, "still serving after the monitor stopped")
}

// The app serves the same metrics with --metrics while it is open.
func TestAppServesMetrics(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "1", "0.5", "1h").code)
	free, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := free.Addr().String()
	require.NoError(t, free.Close())
	s := newTmux(t, 100, 30, "CHRONOS_DB="+db, "CHRONOS_BACKEND=sim", "CHRONOS_SIM_GPUS=2", "GOCOVERDIR="+coverDir, "PS1=$ ")
	s.keys(chronosBin+" --metrics "+addr, "Enter")
	s.waitFor("Bookings (1)")
	var text string
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		text = scrapeText(t, "http://"+addr+"/metrics")
		return strings.Contains(text, "chronos_gpu_unbooked_memory_bytes{")
	}, patience, 100*time.Millisecond)
	require.Contains(t, bookingInfo(text)[1], `gpu="1"`)
	require.NotContains(t, text, "DCGM_", "dcgm names only with --metrics-compat dcgm")

	s.keys("q")
	require.Eventually(t, func() bool {
		_, err := http.Get("http://" + addr + "/metrics")
		return err != nil
	}, patience, 50*time.Millisecond, "still serving after the app quit")
}

// On a ledger many hosts share, a host's monitor serves its own GPUs'
// bookings, so that summing the hosts' series sums the lab.
func TestMetricsOnALabServeThisHost(t *testing.T) {
	t.Parallel()
	lab := labStore(t)
	for _, b := range []struct{ host, gpu, share string }{{"gpu1", "0", "60%"}, {"gpu2", "0", "10%"}, {"gpu2", "1", "20%"}} {
		r := onHost(t, lab, b.host, "create", b.gpu, b.share, "1h")
		require.Equal(t, 0, r.code, r.stderr)
	}
	r := onHost(t, lab, "gpu2", "list", "--gpu", "gpu1:0", "-o", "ids")
	require.Equal(t, "1\n", r.stdout, r.stderr)
	r = onHost(t, lab, "gpu2", "list", "--gpu", "0", "-o", "ids")
	require.Equal(t, "2\n", r.stdout, "an index names this host's GPU")

	_, url := metricsMonitor(t, append(binEnv(""), "CHRONOS_DB=", "CHRONOS_STORE="+lab, "CHRONOS_HOST=gpu2", "CHRONOS_STORE_FILE=/nonexistent"))
	text := scrapeText(t, url)
	info := bookingInfo(text)
	require.Len(t, info, 2, text)
	require.Contains(t, info[2], `hostname="gpu2"`)
	require.Contains(t, info[3], `gpu="1"`)
	require.Regexp(t, `(?m)^chronos_gpu_booked_ratio\{UUID="[^"]+",gpu="0",hostname="gpu2"\} 0.1$`, text)
	require.Regexp(t, `(?m)^chronos_user_booked_gpu_seconds_total\{user="[^"]+"\} `, text)
	require.NotContains(t, text, "chronos_user_unbooked_gpu_seconds_total{", "not recorded per host")
}

// chronos_queue_requests counts the line as the ledger holds it, per GPU
// and for any GPU, with real waiters, and follows it when room frees.
func TestMetricsCountTheLine(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chronos.db")
	require.Equal(t, 0, cli(t, db, "create", "0", "80%", "1h").code)
	require.Equal(t, 0, cli(t, db, "create", "1", "70%", "1h").code)
	for _, ask := range [][]string{{"0", "50%"}, {"0", "40%"}, {"any", "60%"}} {
		until(t, saying(t, waiterCmd(db, "create", ask[0], ask[1], "1h", "--wait")), "waits")
	}
	_, url := metricsMonitor(t, binEnv(db))
	// queued is the line as `queue --json` reads it from the ledger, by
	// the metric's gpu label.
	queued := func() map[string]int {
		var line []view.QueueJSON
		r := cli(t, db, "queue", "--json")
		require.Equal(t, 0, r.code, r.stderr)
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &line))
		n := map[string]int{"0": 0, "1": 0, "any": 0}
		for _, q := range line {
			if q.Device == nil {
				n["any"]++
			} else {
				n[strconv.Itoa(*q.Device)]++
			}
		}
		return n
	}
	served := func() map[string]int {
		n := map[string]int{}
		for _, m := range regexp.MustCompile(`(?m)^chronos_queue_requests\{gpu="(\w+)",hostname="[^"]+"\} (\d+)$`).FindAllStringSubmatch(scrapeText(t, url), -1) {
			n[m[1]], _ = strconv.Atoi(m[2])
		}
		return n
	}
	require.Equal(t, map[string]int{"0": 2, "1": 0, "any": 1}, queued())
	require.Equal(t, queued(), served())

	require.Equal(t, 0, cli(t, db, "release", "1").code, "room on GPU 0 for some of the line")
	require.Eventually(t, func() bool { return queued()["0"] < 2 }, patience, 50*time.Millisecond)
	require.Equal(t, queued(), served())
}
