package monitor

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bbolt "go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/servicetest"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// A booking is admitted on booked shares, but told when it promises memory
// that processes physically hold: a real process shown holding 34 GiB of the
// idle simulated GPU, read by a monitor, which stores the reading.
func TestCreateTellsWhatIsPhysicallyFree(t *testing.T) {
	t.Parallel()
	clock := coretest.NewFakeClock()
	sim := gpu.NewSim(gpu.SimOptions{Now: clock.Now})
	path := filepath.Join(t.TempDir(), "chronos.db")
	c := servicetest.SimClient(bolt.New(path), sim, coretest.Root, clock)
	_, err := c.Inventory()
	require.NoError(t, err)

	// Before any reading, nothing is known and nothing is claimed.
	p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err)
	require.False(t, p.Room.Physical.Known)
	require.Contains(t, p.Room.Room(), "physically free memory unknown")
	require.Empty(t, p.Room.Warning(80<<30))
	require.NoError(t, p.Release())

	hog := exec.Command("sleep", "60")
	require.NoError(t, hog.Start())
	t.Cleanup(func() { hog.Process.Kill(); hog.Wait() })
	sim.Attach(coretest.IdleGPU, hog.Process.Pid, 34<<30)
	m := New(c, Options{Backend: sim})
	_, err = m.Tick()
	require.NoError(t, err)

	p, err = c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Bytes(80 << 30), Duration: time.Hour})
	require.NoError(t, err, "admission counts booked shares")
	require.True(t, p.Room.Physical.Known)
	require.Equal(t, uint64(46<<30), p.Room.Physical.Free)
	require.Equal(t, "100% (80.0 GiB) bookable, 46.0 GiB physically free (read just now)", p.Room.Room())
	require.Equal(t, "80.0 GiB booked, but only 46.0 GiB of GPU 3 is physically free (read just now): "+
		proc.CurrentIdentity().User+" uses 34.0 GiB with no booking (pid "+strconv.Itoa(hog.Process.Pid)+")", p.Room.Warning(p.Bytes))
	require.NoError(t, p.Release())

	// Root turns the warning into a refusal; what fits is still admitted.
	_, err = c.SetPolicy([]string{"admit=physical"})
	require.NoError(t, err)
	before := coretest.FileBytes(t, path)
	_, err = c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Bytes(80 << 30), Duration: time.Hour})
	require.ErrorIs(t, err, domain.ErrMemoryInUse)
	require.ErrorContains(t, err, "only 46.0 GiB of GPU 3 is physically free")
	require.Equal(t, before, coretest.FileBytes(t, path), "a refusal changes nothing")
	p, err = c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Bytes(40 << 30), Duration: time.Hour})
	require.NoError(t, err)
	require.NoError(t, p.Release())

	// A reading nobody renews goes stale: then the figure is unknown, and
	// admission falls back to booked shares.
	clock.Advance(admission.ReadingFreshFor + time.Second)
	p, err = c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Bytes(80 << 30), Duration: time.Hour})
	require.NoError(t, err)
	require.False(t, p.Room.Physical.Known)
}

// A monitor stores a reading when it changed materially (at most every few
// seconds) and renews it every minute; otherwise a pass writes nothing.
func TestReadingsAreStoredSparingly(t *testing.T) {
	t.Parallel()
	clock := coretest.NewFakeClock()
	still := clock.Now()
	sim := gpu.NewSim(gpu.SimOptions{Now: func() time.Time { return still }}) // its made-up load holds still
	path := filepath.Join(t.TempDir(), "chronos.db")
	c := servicetest.SimClient(bolt.New(path), sim, coretest.Root, clock)
	_, err := c.Inventory()
	require.NoError(t, err)
	m := New(c, Options{Backend: sim})
	stored := func() []domain.DeviceReading {
		var rs []domain.DeviceReading
		require.NoError(t, c.Ledger().View(c.Context(), func(tx *storage.Tx) error {
			var err error
			rs, err = tx.DeviceReadings()
			return err
		}))
		return rs
	}
	tick := func(d time.Duration) {
		clock.Advance(d)
		m.nextSample = time.Time{}
		_, err := m.Tick()
		require.NoError(t, err)
	}
	tick(0)
	first := stored()
	require.Len(t, first, 4)
	require.Equal(t, clock.Now(), first[0].Time)

	unchanged := coretest.FileBytes(t, path)
	tick(time.Second)
	require.Equal(t, unchanged, coretest.FileBytes(t, path), "nothing changed: nothing written")

	hog := exec.Command("sleep", "60")
	require.NoError(t, hog.Start())
	t.Cleanup(func() { hog.Process.Kill(); hog.Wait() })
	sim.Attach(coretest.IdleGPU, hog.Process.Pid, 10<<30)
	tick(time.Second)
	require.Equal(t, first[0].Time, stored()[0].Time, "a change within seconds of the last write waits")
	tick(admission.ReadingMinGap)
	require.Equal(t, uint64(10<<30), stored()[coretest.IdleGPU].MemoryUsed)

	renewed := stored()[0].Time
	tick(admission.ReadingHeartbeat - time.Second)
	require.Equal(t, renewed, stored()[0].Time)
	tick(2 * time.Second)
	require.Equal(t, clock.Now(), stored()[0].Time, "renewed though unchanged")
}

// A reading that does not decode is only "unknown": it never stops a
// booking, and the next monitor pass replaces it.
func TestDamagedReadingIsUnknown(t *testing.T) {
	t.Parallel()
	sim := gpu.NewSim(gpu.SimOptions{})
	path := filepath.Join(t.TempDir(), "chronos.db")
	c := servicetest.SimClient(bolt.New(path), sim, coretest.Root, nil)
	_, err := c.Inventory()
	require.NoError(t, err)
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("reading/3"), []byte("not json"))
	}))
	require.NoError(t, db.Close())

	p, err := c.Create(core.Request{Device: coretest.IdleGPU, Memory: human.Fraction(0.5), Duration: time.Hour})
	require.NoError(t, err)
	require.False(t, p.Room.Physical.Known)
	_, err = New(c, Options{Backend: sim}).Tick()
	require.NoError(t, err)
	avail, err := c.Available(coretest.IdleGPU)
	require.NoError(t, err)
	require.True(t, avail[0].Physical.Known)
}
