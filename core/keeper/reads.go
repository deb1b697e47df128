package keeper

import (
	"encoding/json"
	"fmt"
	"net"
	"sync"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
)

// chunk is how much of a read's answer one frame carries: base64 in JSON
// makes it a third larger, and the frame must stay under MaxFrame.
const chunk = 40 << 10

// reads says whether req is a read the keeper answers in chunks.
func reads(req Request) bool { return req.Op == OpSnapshot || req.Op == OpPresent }

// serveRead answers a member's read of a ledger it may not reach: the
// whole ledger as one transaction saw it (nothing but its version when the
// member holds that one already), or the hosts' statuses. A member reads a
// guarded file directly; on etcd the key is root's, so the keeper reads
// for them, and what it sends is what the file's mode would show them.
func (s *Server) serveRead(conn *net.UnixConn, req Request) {
	var data []byte
	var version string
	var err error
	switch req.Op {
	case OpSnapshot:
		data, version, err = s.snapshot()
	case OpPresent:
		data, err = s.present()
	}
	if err != nil {
		_ = WriteFrame(conn, errorReply(err))
		return
	}
	// A member that stops reading holds a goroutine no longer than this.
	_ = conn.SetWriteDeadline(clock.Kernel.Now().Add(DefaultReadTimeout))
	if req.Have == "" || req.Have != version {
		for len(data) > 0 {
			n := min(chunk, len(data))
			if WriteFrame(conn, Reply{V: Version, Kind: ReplyChunk, Data: data[:n]}) != nil {
				return
			}
			data = data[n:]
		}
	}
	_ = WriteFrame(conn, Reply{V: Version, Kind: ReplyDone, Version: version})
}

// snapshotCache is the last snapshot the keeper read, and the ledger's
// Version it was read at.
type snapshotCache struct {
	mu      sync.Mutex
	at      string // the ledger's Version
	data    []byte
	version string // the snapshot's
	reads   int    // whole reads of the ledger (tests)
}

// snapshot is the whole ledger as one transaction reads it. One that the
// ledger's Version says is unchanged since the last is not read again:
// a member's command views the ledger several times. A read that begins
// with a transaction of its own pins the Version (etcd's is the newest
// commit it has seen, which that read sees); a snapshot is kept only when
// the Version did not move while it was read, so it is that Version's.
func (s *Server) snapshot() (data []byte, version string, err error) {
	ledger, ctx := s.Client.Ledger(), s.Client.Context()
	if err := ledger.View(ctx, func(*storage.Tx) error { return nil }); err != nil {
		return nil, "", err
	}
	c := &s.snaps
	before := ledger.Version()
	c.mu.Lock()
	defer c.mu.Unlock()
	if before != "" && before == c.at {
		return c.data, c.version, nil
	}
	var snap *storage.Snapshot
	err = ledger.View(ctx, func(tx *storage.Tx) error {
		snap, err = storage.TakeSnapshot(tx)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	c.reads++
	if data, version, err = snap.Encode(); err != nil {
		return nil, "", err
	}
	if ledger.Version() == before {
		c.at, c.data, c.version = before, data, version
	}
	return data, version, nil
}

// present is the hosts' live statuses, by host; none on a ledger file.
func (s *Server) present() ([]byte, error) {
	statuses := map[string][]byte{}
	if pr := s.Client.Presence(); pr != nil {
		var err error
		if statuses, err = pr.Present(s.Client.Context()); err != nil {
			return nil, fmt.Errorf("the hosts' statuses: %w", err)
		}
	}
	return json.Marshal(statuses)
}
