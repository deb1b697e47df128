package keeper

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
)

// RemoteStore is a guarded ledger as a member reads it where they may not
// reach it themselves (on etcd only root holds the client key): every
// View reads a snapshot the keeper at Path sends, kept while its version
// holds; Update is refused (a member's writes go to the keeper through
// Client). It is a storage.Presence too, for reads of the hosts' statuses.
type RemoteStore struct {
	// Path is the keeper's socket; Where names the ledger for messages.
	Path, Where string
	// Timeout bounds each answer of the keeper, by Clock; zero means
	// DefaultRemoteTimeout, nil the kernel's clock.
	Timeout time.Duration
	Clock   clock.Clock

	mu      sync.Mutex
	snap    *storage.Snapshot
	version string
}

// NewRemoteStore reads the ledger at where through the keeper at socket.
func NewRemoteStore(socket, where string) *RemoteStore {
	return &RemoteStore{Path: socket, Where: where}
}

// ErrMemberWrite says a member's process tried to write a guarded ledger
// it reads through the keeper.
var ErrMemberWrite = fmt.Errorf("%w (%w): members write it through root's keeper", core.ErrGuarded, storage.ErrReadOnly)

// DefaultRemoteTimeout is how long a member waits for the keeper's
// answer: the keeper's own wait for etcd (5 s) and the transfer, with room.
const DefaultRemoteTimeout = 30 * time.Second

// ErrSlow says the keeper took the connection and did not answer.
var ErrSlow = errors.New("the keeper did not answer in time: ask root to check chronos-monitor")

// fetch sends req and gathers the chunks of the answer, until ctx ends or
// the keeper has taken Timeout.
func (r *RemoteStore) fetch(parent context.Context, req Request) ([]byte, Reply, error) {
	k := &Client{Path: r.Path}
	conn, err := k.dial()
	if err != nil {
		return nil, Reply{}, err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	clk := r.Clock
	if clk == nil {
		clk = clock.Kernel
	}
	timer := clk.NewTimer(cmp.Or(r.Timeout, DefaultRemoteTimeout))
	defer timer.Stop()
	go func() {
		select {
		case <-timer.C():
			cancel(fmt.Errorf("%w (%s)", ErrSlow, cmp.Or(r.Timeout, DefaultRemoteTimeout)))
		case <-ctx.Done():
		}
	}()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var data []byte
	done, err := k.call(conn, req, func(rep Reply) {
		if rep.Kind == ReplyChunk {
			data = append(data, rep.Data...)
		}
	})
	if err != nil && ctx.Err() != nil {
		return nil, Reply{}, context.Cause(ctx)
	}
	return data, done, err
}

// current is the ledger as the keeper reads it now: the snapshot held,
// when the keeper says it is still the ledger's.
func (r *RemoteStore) current(ctx context.Context) (*storage.Snapshot, error) {
	r.mu.Lock()
	have := r.version
	r.mu.Unlock()
	data, done, err := r.fetch(ctx, Request{Op: OpSnapshot, Have: have})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(data) == 0 && done.Version == r.version && r.snap != nil {
		return r.snap, nil
	}
	snap, err := storage.DecodeSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("the keeper's answer: %w", err)
	}
	r.snap, r.version = snap, done.Version
	return snap, nil
}

// View runs fn over the ledger as the keeper reads it now.
func (r *RemoteStore) View(ctx context.Context, fn func(*storage.Tx) error) error {
	snap, err := r.current(ctx)
	if err != nil {
		return err
	}
	return snap.View(fn)
}

// Update is refused: a member's writes go through the keeper.
func (r *RemoteStore) Update(context.Context, func(*storage.Tx) error) error {
	return ErrMemberWrite
}

// Changes asks the keeper every poll whether the ledger changed, and sends
// when it did (the snapshot read is kept for the next View).
func (r *RemoteStore) Changes(ctx context.Context, poll time.Duration) <-chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case <-clock.Kernel.After(poll): // pacing, not a time of the books
			}
			was := r.Version()
			if _, err := r.current(ctx); err == nil && r.Version() != was {
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}

// Version is the version of the last snapshot read.
func (r *RemoteStore) Version() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version
}

// String names the ledger.
func (r *RemoteStore) String() string { return r.Where }

// Publish is refused: a member runs no monitor of a guarded ledger.
func (r *RemoteStore) Publish(context.Context, string, []byte, time.Duration) error {
	return ErrMemberWrite
}

// Present is the hosts' live statuses, as the keeper reads them.
func (r *RemoteStore) Present(ctx context.Context) (map[string][]byte, error) {
	data, _, err := r.fetch(ctx, Request{Op: OpPresent})
	if err != nil {
		return nil, err
	}
	var statuses map[string][]byte
	if err := json.Unmarshal(data, &statuses); err != nil {
		return nil, fmt.Errorf("the keeper's answer: the hosts' statuses do not decode: %w", err)
	}
	return statuses, nil
}

// presencePoll is how often WatchPresence asks the keeper.
const presencePoll = 2 * time.Second

// WatchPresence asks the keeper for the hosts' statuses every few seconds
// and sends each that changed (Status nil: it lapsed).
func (r *RemoteStore) WatchPresence(ctx context.Context) <-chan storage.Published {
	out := make(chan storage.Published, 16)
	go func() {
		defer close(out)
		last := map[string][]byte{}
		for {
			if now, err := r.Present(ctx); err == nil {
				for h, st := range now {
					if !bytes.Equal(last[h], st) && !send(ctx, out, storage.Published{Host: h, Status: st}) {
						return
					}
				}
				for h := range maps.Keys(last) {
					if _, ok := now[h]; !ok && !send(ctx, out, storage.Published{Host: h}) {
						return
					}
				}
				last = now
			}
			select {
			case <-ctx.Done():
				return
			case <-clock.Kernel.After(presencePoll): // pacing, not a time of the books
			}
		}
	}()
	return out
}

func send(ctx context.Context, out chan<- storage.Published, p storage.Published) bool {
	select {
	case out <- p:
		return true
	case <-ctx.Done():
		return false
	}
}
