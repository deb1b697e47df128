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
	"github.com/chronos-gpu/chronos/tui/gpus"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// A reading the hardware does not give reads "n/a", in the app and in
// `chronos stats` alike.
func TestReadingsNotGivenReadNA(t *testing.T) {
	t.Parallel()
	require.Equal(t, "n/a", widget.Reading(procfs.NA, "%d%%"))
	require.Equal(t, "n/a", widget.Reading(-1.0, "%.0f W"))
	require.Equal(t, "0%", widget.Reading(0, "%d%%"))
	require.Equal(t, "250 W", widget.Reading(250.4, "%.0f W"))

	d := gpu.DeviceSample{Device: gpu.Device{Index: 0, Name: "GPU", MemoryTotal: 80 << 30},
		Util: procfs.NA, MemUtil: procfs.NA, TempC: procfs.NA, PowerW: -1,
		Processes: []gpu.Process{{PID: 7, UID: 0, User: "root", Command: "x", SM: procfs.NA}}}
	s := gpu.Sample{Time: t0, Backend: "nvml", Devices: []gpu.DeviceSample{d}}
	var out bytes.Buffer
	require.NoError(t, view.WriteStats(&out, core.Stats{Sample: s, Processes: admission.Attribute(s, nil, t0)}))
	require.Contains(t, out.String(), "util n/a  mem-bw n/a  temp n/a  power n/a")

	p := gpus.New(&widget.Shared{Styles: widget.DefaultStyles(), Now: func() time.Time { return t0 }}, 10)
	p.Record(s)
	for _, full := range []bool{true, false} {
		v := ansi.Strip(p.View(100, 3, full)[0])
		require.Contains(t, v, "n/a", "full %v: %q", full, v)
		require.NotContains(t, v, "-1")
	}
}
