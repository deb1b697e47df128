package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

// With two members of three gone, the one left can serve nothing: every
// read and write says the ledger cannot be reached within the timeout,
// whichever side's deadline passes first (the server, given the same
// deadline, often gives up a moment before the client and says so in a
// status of its own).
func TestNoQuorumIsUnavailable(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 3)
	s := openOn(t, c, 300*time.Millisecond)
	c.Members[1].Kill()
	c.Members[2].Kill()
	for i := range 12 {
		var err error
		if i%2 == 0 {
			err = s.View(context.Background(), func(tx *storage.Tx) error { _, err := tx.Partitions(); return err })
		} else {
			_, err = addBooking(s)
		}
		require.ErrorIs(t, err, storage.ErrUnavailable, "try %d", i)
		require.ErrorContains(t, err, "did not answer within 300ms", "try %d", i)
	}
}
