package etcd

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/etcd/etcdtest"
)

var testBucket = []byte("leadertest")

// putKey writes key=value in one update.
func putKey(s *Store, key, value string) error {
	return s.Update(context.Background(), func(tx *storage.Tx) error {
		return tx.Raw().Put(testBucket, []byte(key), []byte(value))
	})
}

// pinnedTo waits until updates go to want ("": to any member, once s has
// found the leader), and returns where they go: it keeps updating, since
// an update starts the look, which runs in the background.
func pinnedTo(t *testing.T, s *Store, want string, within time.Duration) string {
	t.Helper()
	start := time.Now()
	for {
		require.NoError(t, putKey(s, "poke", "x"))
		s.pin.Lock()
		ep := s.pin.ep
		s.pin.Unlock()
		if ep != "" && (want == "" || ep == want) {
			return ep
		}
		require.Less(t, time.Since(start), within, "updates still go to %q, not %q", ep, want)
		time.Sleep(20 * time.Millisecond)
	}
}

// txns is how many KV Txn calls each member has served.
func txns(t *testing.T, c *etcdtest.Cluster) []float64 {
	t.Helper()
	out := make([]float64, len(c.Members))
	for i, m := range c.Members {
		v, err := m.Metric("grpc_server_handled_total", `grpc_method="Txn"`)
		require.NoError(t, err)
		out[i] = v
	}
	return out
}

// onlyLeaderServes makes 20 updates, and checks that the leader served
// them all, and the other members none.
func onlyLeaderServes(t *testing.T, c *etcdtest.Cluster, lead int, s *Store) {
	t.Helper()
	before := txns(t, c)
	for i := range 20 {
		require.NoError(t, putKey(s, "k", string(rune('a'+i))))
	}
	after := txns(t, c)
	for i := range c.Members {
		if i == lead {
			// a read and a commit each
			require.GreaterOrEqual(t, after[i]-before[i], 40.0, "the leader served the updates")
		} else {
			require.Equal(t, before[i], after[i], "member %d, not the leader, served none", i)
		}
	}
}

// Updates go to the member that leads, and only there; when it dies they
// go on over the others at once, and then to the new leader.
func TestUpdatesGoToTheLeader(t *testing.T) {
	c := etcdtest.Start(t, 3)
	// An election takes a second or two, more on a loaded machine.
	s := openOn(t, c, 15*time.Second)
	lead := c.WaitLeader(10 * time.Second)
	require.GreaterOrEqual(t, lead, 0)
	// A one-shot command's one update does not look for the leader.
	require.NoError(t, putKey(s, "once", "x"))
	s.pin.Lock()
	require.False(t, s.pin.looking || !s.pin.looked.IsZero() || s.pin.kv != nil, "looked after one update")
	s.pin.Unlock()
	require.Equal(t, c.Members[lead].Endpoint(), pinnedTo(t, s, "", 10*time.Second))

	onlyLeaderServes(t, c, lead, s)

	c.Members[lead].Kill()
	start := time.Now()
	require.NoError(t, putKey(s, "k", "after the leader died"))
	t.Logf("written %s after the leader died", time.Since(start).Round(time.Millisecond))
	// The next look, lookAgain later, finds the new leader.
	s.pin.Lock()
	s.pin.looked = clock.Kernel.Now().Add(-lookAgain)
	s.pin.Unlock()
	newLead := c.WaitLeader(10 * time.Second)
	require.GreaterOrEqual(t, newLead, 0)
	require.NotEqual(t, lead, newLead)
	require.Equal(t, c.Members[newLead].Endpoint(), pinnedTo(t, s, "", 10*time.Second))
}

var errAbsent = errors.New("the key is absent")

// A pinned member cut off from the others still answers a serializable
// read, with what it had when it was cut off. An update that ends without
// writing on such a read would report a stale world; it must say instead
// that etcd cannot answer.
func TestCutOffMemberNeverAnswersStale(t *testing.T) {
	c := etcdtest.Start(t, 3)
	s := openOn(t, c, 2*time.Second)
	lone := c.Members[2]
	conn, err := s.cli.Dial(lone.Endpoint())
	require.NoError(t, err)
	s.pin.Lock()
	s.pinTo(lone.Endpoint(), 1<<62, conn) // as after a change of leader, before the next look
	s.pin.looked = clock.Kernel.Now().Add(time.Hour)
	s.pin.asked = true
	s.pin.Unlock()
	require.NoError(t, putKey(s, "other", "x")) // the member has all but what follows

	lone.Pause()
	other, err := Open(Config{Endpoints: []string{c.Members[0].Endpoint(), c.Members[1].Endpoint()}, Prefix: s.Prefix()})
	require.NoError(t, err)
	defer func() { _ = other.Close() }()
	require.NoError(t, putKey(other, "k", "written while it was away"))
	c.Members[0].Kill()
	c.Members[1].Kill()
	lone.Resume()

	err = s.Update(context.Background(), func(tx *storage.Tx) error {
		v, err := tx.Raw().Get(testBucket, []byte("k"))
		if err == nil && v == nil {
			return errAbsent // what the member alone would say
		}
		return err
	})
	require.NotErrorIs(t, err, errAbsent)
	require.ErrorIs(t, err, storage.ErrUnavailable)
}

// Over TLS with client certificates, as a guarded lab's etcd is: the
// leader's connection shakes hands as the client's do.
func TestUpdatesGoToTheLeaderOverTLS(t *testing.T) {
	certs, err := etcdtest.NewCerts(t.TempDir())
	require.NoError(t, err)
	c := etcdtest.StartTLSMembers(t, certs, true, 3)
	s := openTLS(t, c, "/tls-leader", certs.CA, certs.ClientCert, certs.ClientKey)
	lead := c.WaitLeader(10 * time.Second)
	require.GreaterOrEqual(t, lead, 0)
	require.Equal(t, c.Members[lead].Endpoint(), pinnedTo(t, s, "", 10*time.Second))
	onlyLeaderServes(t, c, lead, s)
}

// When the lead moves to another member that stays up, the next answer
// comes from a later term, and updates follow the lead at once rather
// than at the next regular look (lookEvery).
func TestUpdatesFollowTheLeadWhenItMoves(t *testing.T) {
	c := etcdtest.Start(t, 3)
	s := openOn(t, c, 15*time.Second)
	lead := c.WaitLeader(10 * time.Second)
	require.GreaterOrEqual(t, lead, 0)
	require.Equal(t, c.Members[lead].Endpoint(), pinnedTo(t, s, "", 10*time.Second))

	next := (lead + 1) % len(c.Members)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := s.cli.Status(ctx, c.Members[next].Endpoint())
	require.NoError(t, err)
	toLead, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Members[lead].Endpoint()}, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	defer func() { _ = toLead.Close() }()
	_, err = toLead.MoveLeader(ctx, st.Header.MemberId)
	require.NoError(t, err)
	require.Equal(t, next, c.WaitLeader(10*time.Second))

	// Well before the next regular look.
	pinnedTo(t, s, c.Members[next].Endpoint(), lookEvery/2)
	onlyLeaderServes(t, c, next, s)
}
