package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core/coretest"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
)

func TestFindEvents(t *testing.T) {
	t.Parallel()
	clock := coretest.NewFakeClock()
	path := t.TempDir() + "/chronos.db"
	byAlice, byBob, byRoot := clientAt(path, clock, coretest.Alice), clientAt(path, clock, coretest.Bob), clientAt(path, clock, coretest.Root)
	a, err := byAlice.Create(Request{Device: 0, Memory: human.Fraction(0.25), Duration: time.Hour}) // event 1
	require.NoError(t, err)
	clock.Advance(30 * time.Minute)
	b, err := byBob.Create(Request{Device: 1, Memory: human.Fraction(0.25), Duration: time.Hour}) // 2
	require.NoError(t, err)
	clock.Advance(time.Minute)
	_, err = byRoot.Extend(a.ID, time.Hour) // 3: root acted on alice's booking
	require.NoError(t, err)
	require.NoError(t, byRoot.ledger.Update(context.Background(), func(tx *storage.Tx) error { // 4: bob's process, no booking
		return tx.AddEvent(domain.Event{Time: clock.Now(), Kind: domain.EventUnbooked, UID: 0, User: "root",
			Process: &domain.EventProcess{PID: 42, UID: coretest.Bob.UID, User: coretest.Bob.User}})
	}))
	_, err = byBob.Release(b.ID) // 5
	require.NoError(t, err)

	seqs := func(f EventFilter, limit int) []uint64 {
		t.Helper()
		evs, err := byAlice.FindEvents(f, limit)
		require.NoError(t, err)
		var out []uint64
		for _, e := range evs {
			out = append(out, e.Seq)
		}
		return out
	}
	require.Equal(t, []uint64{1, 2, 3, 4, 5}, seqs(EventFilter{}, 0))
	require.Equal(t, []uint64{4, 5}, seqs(EventFilter{}, 2), "the newest, oldest first")
	require.Equal(t, []uint64{1, 3}, seqs(EventFilter{Booking: a.ID}, 0))
	require.Equal(t, []uint64{1, 3}, seqs(EventFilter{User: "alice"}, 0), "her own act, and root's on her booking")
	require.Equal(t, []uint64{2, 4, 5}, seqs(EventFilter{User: "1002"}, 0), "by uid: bob's bookings and his process")
	require.Equal(t, []uint64{3, 4}, seqs(EventFilter{User: "root"}, 0))
	require.Equal(t, []uint64{3, 4, 5}, seqs(EventFilter{Since: clock.Now().Add(-time.Second)}, 0))
	require.Equal(t, []uint64{5}, seqs(EventFilter{User: "bob", Since: clock.Now().Add(-time.Second)}, 1))
	require.Empty(t, seqs(EventFilter{Booking: 99}, 0))
}
