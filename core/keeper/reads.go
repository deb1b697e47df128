package keeper

import (
	"encoding/json"
	"fmt"
	"net"

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

// snapshot reads the whole ledger in one transaction.
func (s *Server) snapshot() (data []byte, version string, err error) {
	var snap *storage.Snapshot
	err = s.Client.Ledger().View(s.Client.Context(), func(tx *storage.Tx) error {
		snap, err = storage.TakeSnapshot(tx)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return snap.Encode()
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
