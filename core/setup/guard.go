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
