package tui

import (
	"fmt"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu"
)

// BenchmarkView draws a busy machine: 8 GPUs, 1,000 bookings, 200 GPU
// processes, at 140×40. The bookings and processes are built in memory (the
// ledger's own speed is not what is measured); the GPU reading is the
// simulated backend's, with processes added to reach 200.
func BenchmarkView(b *testing.B) {
	m, _ := busyModel(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = m.View()
	}
}

func busyModel(b *testing.B) (*Model, ledgerMsg) {
	w := newWorld(b, 8)
	m := New(w.options())
	update(b, m, tea.WindowSizeMsg{Width: 140, Height: 40})

	s, err := w.sim.Sample()
	require.NoError(b, err)
	users := []string{"alice", "bob", "carol", "dave", "erin", "frank"}
	for i := 0; countProcs(s) < 200; i++ {
		d := &s.Devices[i%len(s.Devices)]
		u := i % len(users)
		d.Processes = append(d.Processes, gpu.Process{
			PID: 10_000 + i, UID: 3000 + u, User: users[u], Command: fmt.Sprintf("python job_%d.py --epochs 10", i),
			MemoryUsed: 1 << 30, SM: i % 100,
		})
	}
	require.Equal(b, 200, countProcs(s))

	parts := make([]core.Partition, 1000)
	for i := range parts {
		u := i % len(users)
		parts[i] = core.Partition{Partition: domain.Partition{
			ID: uint64(i + 1), Device: i % 8, SharePPM: 1000, Bytes: 80 << 20, UID: 3000 + u, User: users[u],
			Created: t0.Add(-time.Hour), Expires: t0.Add(time.Duration(i) * time.Minute), State: domain.Live,
		}}
	}
	update(b, m, sampleMsg{sample: s})
	msg := ledgerMsg{parts: parts, policy: policy.Default()}
	update(b, m, msg)
	require.Greater(b, len(m.bookings.Table.Rows), 900)
	return m, msg
}

// BenchmarkRefresh is the work of one refresh with the same load: taking in a
// ledger reading (attribution, filtering, sorting) and drawing.
func BenchmarkRefresh(b *testing.B) {
	m, msg := busyModel(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m.Update(msg)
		_ = m.View()
	}
}

func countProcs(s gpu.Sample) int {
	n := 0
	for _, d := range s.Devices {
		n += len(d.Processes)
	}
	return n
}
