package main

import (
	"fmt"
	"os"

	"github.com/chronos-gpu/chronos/core/setup"
	"github.com/chronos-gpu/chronos/storage"
)

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
