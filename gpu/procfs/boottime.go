package procfs

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chronos-gpu/chronos/core/clock"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's start
// time. It is 100 on every Linux architecture Go supports.
const clockTicks = 100

var bootTime = sync.OnceValue(func() time.Time {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(secs, 0)
			}
		}
	}
	return time.Time{}
})

// StartedAt turns a process start time in clock ticks since boot
// (Process.StartTime) into wall-clock time. It returns the zero time when the
// start is unknown. The boot time has a resolution of a second, so the
// result may be up to a second early.
func StartedAt(ticks uint64) time.Time {
	boot := bootTime()
	if ticks == 0 || boot.IsZero() {
		return time.Time{}
	}
	return clock.FromKernel(boot.Add(time.Duration(ticks) * time.Second / clockTicks))
}
