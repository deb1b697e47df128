package tui

import (
	"bytes"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// Widths are terminal cells, not bytes: "█" is three bytes, "田" two cells.
func TestPaddingCountsCells(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text  string
		width int
		want  string
	}{
		{"█", 3, "  █"},
		{"田中", 6, "  田中"},
		{"12.3 GiB", 9, " 12.3 GiB"},
		{"123456", 4, "123…"},
	} {
		require.Equal(t, tc.want, padLeft(tc.text, tc.width), "%q in %d", tc.text, tc.width)
		require.Equal(t, tc.width, ansi.StringWidth(padLeft(tc.text, tc.width)))
		require.Equal(t, tc.width, ansi.StringWidth(fit(tc.text, tc.width)))
	}
}

// A reading the hardware does not give reads "n/a", in the app and in
// `chronos stats` alike.
func TestReadingsNotGivenReadNA(t *testing.T) {
	t.Parallel()
	require.Equal(t, "n/a", reading(procfs.NA, "%d%%"))
	require.Equal(t, "n/a", reading(-1.0, "%.0f W"))
	require.Equal(t, "0%", reading(0, "%d%%"))
	require.Equal(t, "250 W", reading(250.4, "%.0f W"))

	d := gpu.DeviceSample{Device: gpu.Device{Index: 0, Name: "GPU", MemoryTotal: 80 << 30},
		Util: procfs.NA, MemUtil: procfs.NA, TempC: procfs.NA, PowerW: -1,
		Processes: []gpu.Process{{PID: 7, UID: 0, User: "root", Command: "x", SM: procfs.NA}}}
	s := gpu.Sample{Time: t0, Backend: "nvml", Devices: []gpu.DeviceSample{d}}
	var out bytes.Buffer
	require.NoError(t, view.WriteStats(&out, core.Stats{Sample: s, Processes: admission.Attribute(s, nil, t0)}))
	require.Contains(t, out.String(), "util n/a  mem-bw n/a  temp n/a  power n/a")

	p := newGPUPanel(&shared{styles: DefaultStyles(), now: func() time.Time { return t0 }}, 10)
	p.record(s)
	for _, full := range []bool{true, false} {
		v := ansi.Strip(p.draw(panelSize{width: 100, lines: 3, full: full})[0])
		require.Contains(t, v, "n/a", "full %v: %q", full, v)
		require.NotContains(t, v, "-1")
	}
}
