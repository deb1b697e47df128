package main

import (
	"fmt"
	"strings"

	"github.com/chronos-gpu/chronos/core/keeper"
	"github.com/chronos-gpu/chronos/core/proc"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
	"github.com/chronos-gpu/chronos/storage/etcd"
)

// The command layer alone picks a ledger's engine; core and the app work on
// whichever storage.Store it hands them.

// onEtcd reports whether cfg's store is an etcd cluster (many hosts)
// rather than a file (this host alone).
func onEtcd(cfg setup.StoreConfig) bool { return etcd.IsURL(cfg.Store) }

// openStore opens the ledger cfg names. An etcd store is not reached until
// the first transaction, which fails within the timeout when etcd does not
// answer.
func openStore(cfg setup.StoreConfig) (storage.Store, error) {
	if !onEtcd(cfg) {
		// "gpu1:2379" would make a ledger file of that name: say what was
		// probably meant.
		if _, err := etcd.ParseURL(etcd.Scheme + cfg.Store); err == nil && !strings.Contains(cfg.Store, "/") {
			return nil, usageError{fmt.Errorf("store %q: a ledger on etcd is written %s%s", cfg.Store, etcd.Scheme, cfg.Store)}
		}
		return bolt.New(cfg.Store), nil
	}
	ec, err := etcd.ParseURL(cfg.Store)
	if err != nil {
		return nil, usageError{err}
	}
	if cfg.Guarded != "" && !proc.RealRoot() {
		// The key is root's: a member reads through root's keeper.
		return keeper.NewRemoteStore(keeper.SocketPath(), cfg.Store), nil
	}
	if ec.TLS, err = etcd.TLSConfig(cfg.CACert, cfg.Cert, cfg.Key); err != nil {
		return nil, err
	}
	return etcd.Open(ec)
}
