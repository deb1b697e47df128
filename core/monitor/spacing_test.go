package monitor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// A writing pass on a ledger with a writers' line comes no sooner than
// four times what the last one took after it ended, at most half a second;
// one that found its expiries and warnings done by another monitor waits
// a second. A ledger file spaces nothing.
func TestWritingPassesAreSpacedOnALine(t *testing.T) {
	t0 := coretest.NewFakeClock().Now()
	w := newWriteSpacing(storetest.Etcd(t, etcdtest.Shared(t))())
	_, wait := w.wait(t0)
	require.False(t, wait, "the first pass writes at once")

	w.wrote(t0, t0.Add(100*time.Millisecond), false)
	at, wait := w.wait(t0.Add(450 * time.Millisecond))
	require.True(t, wait)
	require.Equal(t, t0.Add(500*time.Millisecond), at)
	_, wait = w.wait(t0.Add(500 * time.Millisecond))
	require.False(t, wait)

	w.wrote(t0, t0.Add(time.Minute), false) // a pass that waited long on etcd
	_, wait = w.wait(t0.Add(time.Minute + 500*time.Millisecond))
	require.False(t, wait, "never more than half a second")

	w.wrote(t0, t0.Add(5*time.Millisecond), true)
	at, wait = w.wait(t0.Add(900 * time.Millisecond))
	require.True(t, wait, "forestalled: the other monitor keeps the records")
	require.Equal(t, t0.Add(5*time.Millisecond+time.Second), at)

	file := newWriteSpacing(storetest.Bolt(t)())
	file.wrote(t0, t0.Add(time.Second), true)
	_, wait = file.wait(t0.Add(time.Second))
	require.False(t, wait)
}

// On a busy etcd ledger a monitor reads the whole ledger at most once a
// changeGap for the change notices, not once for each commit: 200 commits
// in a row start a handful of reads.
func TestMonitorReadsABusyLedgerOncePerChangeGap(t *testing.T) {
	t.Parallel()
	open := storetest.Etcd(t, etcdtest.Shared(t))
	counted := &coretest.CountingStore{Store: open()}
	sim := gpu.NewSim(gpu.SimOptions{})
	me := proc.CurrentIdentity()
	c := core.NewClient(core.Options{Ledger: counted, As: &me, Devices: simDevices(sim)})
	writer := core.NewClient(core.Options{Ledger: open(), As: &me, Devices: simDevices(sim)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = New(c, Options{}).Run(ctx); close(done) }()
	require.Eventually(t, func() bool { return counted.Views.Load() > 0 }, 10*time.Second, time.Millisecond)

	start, before := clock.Kernel.Now(), counted.Views.Load()
	for range 100 {
		p, err := writer.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Bytes(1 << 20), Duration: time.Hour})
		require.NoError(t, err)
		_, err = writer.Release(p.ID)
		require.NoError(t, err)
	}
	took := clock.Since(clock.Kernel, start)
	cancel()
	<-done
	reads := counted.Views.Load() - before
	// A pass each changeGap for the notices, one each MaxSleep for the
	// timer, and the last notices' pass.
	most := int64(took/changeGap) + int64(took/clock.MaxSleep) + 2
	t.Logf("%d reads during 200 commits in %s (at most %d)", reads, took.Round(time.Millisecond), most)
	require.LessOrEqual(t, reads, most)
}
