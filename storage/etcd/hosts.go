package etcd

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
)

// Hosts' live statuses live at <prefix>/hosts/<host> under one lease per
// Store, kept alive while the process lives: when it dies, etcd deletes its
// statuses a TTL later.

func (s *Store) hostsPrefix() string { return s.cfg.Prefix + "/hosts/" }

// leaseHolder keeps one of the store's leases (hosts' statuses, places in
// the writers' line), kept alive while the process lives.
type leaseHolder struct {
	mu   sync.Mutex
	id   clientv3.LeaseID
	lost chan struct{} // closed when the keep-alive ends
	stop context.CancelFunc
}

// lease returns h's live lease of ttl, granting one when there is none.
func (s *Store) lease(ctx context.Context, h *leaseHolder, ttl time.Duration) (clientv3.LeaseID, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.id != 0 {
		select {
		case <-h.lost:
			h.id = 0
		default:
			return h.id, nil
		}
	}
	g, err := s.cli.Grant(ctx, max(1, int64(ttl.Round(time.Second)/time.Second)))
	if err != nil {
		return 0, err
	}
	kctx, stop := context.WithCancel(context.Background())
	alive, err := s.cli.KeepAlive(kctx, g.ID)
	if err != nil {
		stop()
		return 0, err
	}
	lost := make(chan struct{})
	go func() {
		for range alive { // drained, or the client complains it is full
		}
		close(lost)
	}()
	if h.stop != nil {
		h.stop()
	}
	h.id, h.lost, h.stop = g.ID, lost, stop
	return g.ID, nil
}

// forget drops id, a lease etcd no longer has, so that the next lease is
// granted anew.
func (h *leaseHolder) forget(id clientv3.LeaseID) {
	h.mu.Lock()
	if h.id == id {
		h.id = 0
	}
	h.mu.Unlock()
}

// end stops keeping h's lease alive and returns it (0: none).
func (h *leaseHolder) end() clientv3.LeaseID {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop != nil {
		h.stop()
	}
	id := h.id
	h.id = 0
	return id
}

// Publish sets host's status under the store's lease.
func (s *Store) Publish(ctx context.Context, host string, status []byte, ttl time.Duration) error {
	ctx, cancel := s.operation(ctx)
	defer cancel()
	for range 2 {
		id, err := s.lease(ctx, &s.leases, ttl)
		if err != nil {
			return s.unavailable(ctx, "publish", err)
		}
		_, err = s.cli.Put(ctx, s.hostsPrefix()+host, string(status), clientv3.WithLease(id))
		if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			if err != nil {
				return s.unavailable(ctx, "publish", err)
			}
			return nil
		}
		// The lease lapsed (etcd was away longer than the TTL): a new one.
		s.leases.forget(id)
	}
	return s.unavailable(ctx, "publish", rpctypes.ErrLeaseNotFound)
}

// Present returns every status that has not lapsed.
func (s *Store) Present(ctx context.Context) (map[string][]byte, error) {
	ctx, cancel := s.operation(ctx)
	defer cancel()
	resp, err := s.cli.Get(ctx, s.hostsPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, s.unavailable(ctx, "read hosts", err)
	}
	out := make(map[string][]byte, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), s.hostsPrefix())] = kv.Value
	}
	return out, nil
}

// WatchPresence sends statuses as they are published or lapse. A broken
// watch (etcd away) is started again.
func (s *Store) WatchPresence(ctx context.Context) <-chan storage.Published {
	out := make(chan storage.Published, 16)
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			for wr := range s.cli.Watch(wctx, s.hostsPrefix(), clientv3.WithPrefix()) {
				if wr.Err() != nil {
					break
				}
				for _, ev := range wr.Events {
					p := storage.Published{Host: strings.TrimPrefix(string(ev.Kv.Key), s.hostsPrefix())}
					if ev.Type == mvccpb.PUT {
						p.Status = stored(ev.Kv.Value)
					}
					select {
					case out <- p:
					case <-ctx.Done():
					}
				}
			}
			cancel()
			select {
			case <-ctx.Done():
			case <-clock.Kernel.After(time.Second): // a broken watch is tried again
			}
		}
	}()
	return out
}
