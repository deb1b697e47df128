package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
	"github.com/chronos-gpu/chronos/storage/storetest"
)

// How many tries a writer on etcd loses before it joins the writers' line,
// and how long a place in that line outlives its writer: storage/etcd's
// turnAfter and turnTTL.
const (
	turnAfterTries = 2
	writersTurnTTL = 3 * time.Second
)

// A writer killed (SIGKILL, a real process) after its reads and before its
// commit, while it holds the writers' turn: nothing of its booking is
// written, the turn lapses with its lease, and the others' bookings go on:
// a create at that moment waits for the turn to lapse, within its timeout,
// and books.
func TestWriterKilledMidTransaction(t *testing.T) {
	t.Parallel()
	cl := etcdtest.Shared(t)
	open := storetest.Etcd(t, cl)
	s := open()
	// The create at the kill is given time enough that only the turn's
	// lapse, not the machine's load (-race, CI's two cores), decides
	// when it books.
	patient, err := etcd.Open(etcd.Config{Endpoints: cl.Endpoints(), Prefix: s.(*etcd.Store).Prefix(), Timeout: 4 * writersTurnTTL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = patient.Close() })
	other := hostClient(patient, "gpu2", coretest.Bob)
	marker := filepath.Join(t.TempDir(), "w")
	w := coretest.RoleCmd(t, "holdturn", s.String(), marker)
	w.Env = append(w.Env, "CHRONOS_TEST_HOST=gpuK")
	require.NoError(t, w.Start())
	t.Cleanup(func() { _ = w.Process.Kill(); _ = w.Wait() })
	reached := func(try int) {
		t.Helper()
		require.Eventually(t, func() bool { _, err := os.Stat(fmt.Sprintf("%s.%d", marker, try)); return err == nil }, 15*time.Second, 5*time.Millisecond, "try %d", try)
	}
	for try := 1; try <= turnAfterTries; try++ {
		reached(try)
		// Another writer commits meanwhile: this try loses.
		_, err := other.Create(Request{Device: 1, Memory: human.Fraction(0.1), Duration: time.Hour})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(fmt.Sprintf("%s.go%d", marker, try), nil, 0o600))
	}
	reached(turnAfterTries + 1) // it holds the turn now
	require.NoError(t, w.Process.Kill())
	_ = w.Wait()
	killed := time.Now()

	_, err = other.Create(Request{Device: 0, Memory: human.Fraction(0.1), Duration: time.Hour})
	require.NoError(t, err, "the create at the kill waits out the dead writer's turn")
	took := time.Since(killed)
	t.Logf("booked %s after the kill", took.Round(100*time.Millisecond))
	// Inside a store's 5 s: the place lapses with its lease (turnTTL), and
	// etcd looks for lapsed leases twice a second.
	require.Less(t, took, 5*time.Second, "the dead writer's place outlived a store's timeout")

	parts, err := other.List(true)
	require.NoError(t, err)
	for _, p := range parts {
		require.Equal(t, "gpu2", p.Host, "nothing of the killed writer's booking: %+v", p)
	}
	d, err := storage.DiagnoseStore(context.Background(), s, clock.System().Now())
	require.NoError(t, err)
	require.True(t, d.Healthy, "%v", d.Problems)
}
