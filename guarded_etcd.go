package main

import (
	"fmt"
	"os"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/storage"
)

// A guarded ledger on etcd: etcd takes anyone who holds the client key,
// so the key is root's alone, and members reach the ledger only through
// their host's keeper (root's monitor), which reads for them (a snapshot,
// keeper.RemoteStore) and writes as them. The store file says the ledger
// is guarded, so that a member's chronos knows without the key.

// guardStore checks what a guarded ledger on etcd needs (a group, and
// TLS with a client key etcd requires) and makes the key root's alone.
func guardStore(cfg setup.StoreConfig, group string) (storage.Guard, error) {
	g, err := setup.GuardOf(group)
	if err != nil {
		return g, err
	}
	if cfg.Cert == "" || cfg.Key == "" {
		return g, domain.InputErr("init --store --guarded needs --cert and --key (and etcd started with --client-cert-auth): " +
			"without a client key only root holds, any member could write etcd directly")
	}
	return g, setup.MakeKeyRoots(cfg.Key)
}

// guardedStoreNote is what init --store says of a guarded ledger.
func guardedStoreNote(g *storage.Guard, key string) string {
	if g == nil {
		return ""
	}
	return fmt.Sprintf("; guarded: %s is root's alone (mode %04o), and members of %s read and write it through root's monitor, "+
		"which each host runs (sudo systemctl enable --now chronos-monitor)", key, setup.KeyMode, g.Group)
}

// localGuard is g as this host numbers its group: the hosts of a lab on
// etcd share the ledger's mark, and may number one group differently.
func localGuard(g storage.Guard) storage.Guard {
	if local, err := setup.GuardOf(g.Group); err == nil {
		return local
	}
	return g
}

// keyWarning is what the keeper of a guarded ledger on etcd says at its
// start when this host's client key is not root's alone (a host that was
// never init'ed with --guarded): members here may still reach etcd.
func keyWarning(cfg setup.StoreConfig) string {
	if !onEtcd(cfg) || cfg.Key == "" {
		return ""
	}
	st, err := os.Stat(cfg.Key)
	if err != nil {
		return ""
	}
	if uid, _, _ := storage.OwnerOf(st); uid == 0 && st.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("; WARNING: the etcd key %s is mode %04o, not root's alone: members may reach etcd directly "+
		"(run sudo chronos init --store … --guarded --group NAME on this host)", cfg.Key, st.Mode().Perm())
}
