package admission

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/gpu/procfs"
)

// Attribute weighs only the bookings that may claim a process (claimants);
// on random bookings and processes it must attribute every process exactly
// as weighing every booking does, while weighing fewer of them.
func TestAttributeWeighsOnlyClaimants(t *testing.T) {
	t.Parallel()
	const clockTicks = 100 // a process's start, in /proc's ticks since boot
	base := procfs.StartedAt(1_000_000)
	if base.IsZero() {
		t.Skip("no boot time to place processes' starts in")
	}
	rng := rand.New(rand.NewPCG(7, 11))
	ticksAt := func(t time.Time) uint64 { return 1_000_000 + uint64(t.Sub(base)/(time.Second/clockTicks)) }
	minute := func(n int) time.Time { return base.Add(time.Duration(n) * time.Minute) }
	dropped := 0
	for round := range 300 {
		now := minute(600)
		var parts []domain.Partition
		for id := uint64(1); id <= uint64(5+rng.IntN(60)); id++ {
			start := minute(rng.IntN(700))
			p := domain.Partition{ID: id, UID: rng.IntN(4), Device: rng.IntN(3), Bytes: uint64(1+rng.IntN(8)) << 30,
				Start: start, Expires: start.Add(time.Duration(1+rng.IntN(120)) * time.Minute)}
			switch rng.IntN(4) {
			case 0:
				p.State = domain.Expired
			case 1:
				p.State, p.Ended = domain.Released, start.Add(time.Duration(rng.IntN(60))*time.Minute)
			default:
				p.State = domain.Live
			}
			if p.State == domain.Expired && rng.IntN(3) == 0 {
				p.Ended = start.Add(time.Duration(rng.IntN(60)) * time.Minute) // reclaimed early
			}
			parts = append(parts, p)
		}
		s := gpu.Sample{Devices: make([]gpu.DeviceSample, 3)}
		for d := range s.Devices {
			s.Devices[d].Index = d
			for range rng.IntN(5) {
				proc := gpu.Process{PID: 100 + rng.IntN(1000), UID: rng.IntN(5) - 1, MemoryUsed: uint64(rng.IntN(4)) << 30}
				if rng.IntN(4) > 0 {
					proc.StartTime = ticksAt(minute(rng.IntN(700)))
				}
				switch rng.IntN(6) {
				case 0:
					proc.PartitionID = strconv.Itoa(1 + rng.IntN(70))
				case 1:
					proc.PartitionID = "junk"
				}
				proc.MPSServer = rng.IntN(20) == 0
				s.Devices[d].Processes = append(s.Devices[d].Processes, proc)
			}
		}
		require.Equal(t, attribute(s, parts, now), Attribute(s, parts, now), "round %d", round)
		dropped += len(parts) - len(claimants(s, parts, now))
	}
	require.Positive(t, dropped, "no booking was ever left out: the test weighs nothing")
}

// BenchmarkAttributeADayOfBookings attributes 24 processes, started within
// the last hour, against a monitor's snapshot of a busy day: 3,000
// bookings, 30 live. Weighing every booking is the baseline.
func BenchmarkAttributeADayOfBookings(b *testing.B) {
	now := procfs.StartedAt(10_000_000)
	if now.IsZero() {
		b.Skip("no boot time to place processes' starts in")
	}
	var parts []domain.Partition
	for i := range 3000 {
		start := now.Add(-24*time.Hour + time.Duration(i)*28*time.Second)
		p := domain.Partition{ID: uint64(i + 1), UID: 1000 + i%8, Device: i % 4, Bytes: 4 << 30, State: domain.Expired,
			Start: start, Expires: start.Add(30 * time.Minute)}
		if i >= 2970 {
			p.State, p.Expires = domain.Live, now.Add(time.Hour)
		}
		parts = append(parts, p)
	}
	s := gpu.Sample{Devices: make([]gpu.DeviceSample, 4)}
	for i := range 24 {
		d := i % 4
		s.Devices[d].Index = d
		s.Devices[d].Processes = append(s.Devices[d].Processes,
			gpu.Process{PID: 100 + i, UID: 1000 + i%8, StartTime: 10_000_000 - uint64(i)*100*60, MemoryUsed: 1 << 30})
	}
	for _, c := range []struct {
		name string
		fn   func(gpu.Sample, []domain.Partition, time.Time) []Attribution
	}{{"every-booking", attribute}, {"claimants", Attribute}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.fn(s, parts, now)
			}
		})
	}
}
