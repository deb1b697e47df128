package view

import (
	"fmt"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
)

// BackendChoices are the backends --backend takes, each with a tab and
// what it reads, as completion offers them.
func BackendChoices() []string {
	about := map[gpu.Kind]string{gpu.KindAuto: "NVML, else DRM, else simulated", gpu.KindNVML: "NVIDIA, through NVML",
		gpu.KindDRM: "AMD and Intel, through the kernel", gpu.KindSim: "simulated GPUs"}
	var out []string
	for _, k := range gpu.Kinds {
		out = append(out, string(k)+"\t"+about[k])
	}
	return out
}

// BookingDescription is a booking as completion describes it: owner, GPU,
// share and time left (or when it starts, and for how long).
func BookingDescription(p core.Partition, now time.Time) string {
	when := minutesLeft(p.Expires.Sub(now)) + " left"
	if p.Upcoming(now) { // its time left is not counted before it starts
		when = fmt.Sprintf("from %s for %s", human.FormatTime(p.Start, now), minutesLeft(p.Expires.Sub(p.Start)))
	}
	return fmt.Sprintf("%s · GPU %s · %s · %s", human.Printable(p.User), p.GPUName(), human.FormatPercent(p.SharePPM), when)
}

// minutesLeft is a booking's time left to the minute, or to the second in
// its last minute.
func minutesLeft(d time.Duration) string {
	if d >= time.Minute {
		d = d.Truncate(time.Minute)
	}
	return human.FormatDuration(d)
}
