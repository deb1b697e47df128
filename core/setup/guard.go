package setup

import (
	"fmt"
	"io/fs"
	"os/user"
	"strconv"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/storage"
)

// GuardedDirMode is a guarded ledger's directory: root's, setgid so files
// keep the group, which may enter and read but not create, rename or remove
// anything there.
const GuardedDirMode = fs.ModeDir | fs.ModeSetgid | 0o750

// GuardedFileMode is a guarded ledger's mode: root writes it, the group's
// members read it directly (list, stats and the app stay fast).
const GuardedFileMode fs.FileMode = 0o640

// InitGuardedAt prepares the ledger at path, and its directory, as a
// guarded ledger of group (see InitSharedAt): every write then goes through
// root's keeper. Root only; the group is required (a ledger only root uses
// needs no guard).
func InitGuardedAt(path, group string) (storage.Guard, error) {
	g, err := GuardOf(group)
	if err != nil {
		return g, err
	}
	if _, err := initShared(path, group, GuardedDirMode, GuardedFileMode); err != nil {
		return storage.Guard{}, err
	}
	return g, nil
}

// GuardOf is the guard of a ledger kept for group, as this host numbers
// it: the group is required (a ledger only root uses needs no guard).
func GuardOf(group string) (storage.Guard, error) {
	if group == "" {
		return storage.Guard{}, domain.InputErr("--guarded needs --group NAME: the group whose members may book through the keeper")
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return storage.Guard{}, fmt.Errorf("%w: %s", domain.ErrUnknownGroup, human.Quote(group))
	}
	gid, _ := strconv.Atoi(g.Gid)
	return storage.Guard{Group: g.Name, GID: gid}, nil
}

// A guarded ledger on etcd: etcd takes anyone who holds the client key,
// so the key is root's alone, and members reach the ledger only through
// their host's keeper (root's monitor), which reads for them (a snapshot,
// keeper.RemoteStore) and writes as them. The store file says the ledger
// is guarded, so that a member's chronos knows without the key.

// GuardStore checks what a guarded ledger on etcd needs (a group, and
// TLS with a client key etcd requires) and makes the key root's alone.
func GuardStore(cfg StoreConfig, group string) (storage.Guard, error) {
	g, err := GuardOf(group)
	if err != nil {
		return g, err
	}
	if cfg.Cert == "" || cfg.Key == "" {
		return g, domain.InputErr("init --store --guarded needs --cert and --key (and etcd started with --client-cert-auth): " +
			"without a client key only root holds, any member could write etcd directly")
	}
	return g, MakeKeyRoots(cfg.Key)
}

// GuardedStoreNote is what init --store says of a guarded ledger.
func GuardedStoreNote(g *storage.Guard, key string) string {
	if g == nil {
		return ""
	}
	return fmt.Sprintf("; guarded: %s is root's alone (mode %04o), and members of %s read and write it through root's monitor, "+
		"which each host runs (sudo systemctl enable --now chronos-monitor)", key, KeyMode, g.Group)
}

// LocalGuard is g as this host numbers its group: the hosts of a lab on
// etcd share the ledger's mark, and may number one group differently.
func LocalGuard(g storage.Guard) storage.Guard {
	if local, err := GuardOf(g.Group); err == nil {
		return local
	}
	return g
}
