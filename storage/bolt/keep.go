package bolt

// A ledger's only writer (a guarded ledger's keeper) keeps the file open
// between its writes: opening it, with the checks a writer makes first,
// and unmapping it again cost more than the transaction (0.2-0.3 ms of a
// create's 1 ms). The file stays mapped but unlocked between writes, so
// members' reads go on as before; each write takes the lock again and
// goes on with the kept handle only if the file is still the one it left:
// the same file at the path, its newest commit the one this process made.
// Anything else (a write of another process, a repair that renamed a new
// file over it, damage) closes the handle and opens the file anew, with
// every check.

import (
	"os"

	"go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// kept is a ledger file held open, unlocked, between this process's writes.
type kept struct {
	db   *bbolt.DB
	file *os.File
	txid uint64 // the file's newest commit, as this process left it
}

// reuse takes the write lock on the kept handle and returns it, if the
// file is as this process left it; else it closes the handle and says so
// (nil). err is the lock's: the handle is kept for the next write.
func (k *kept) reuse(l *Ledger) (*bbolt.DB, *os.File, error) {
	if err := lockLedger(k.file, true, l.timeout()); err != nil {
		return nil, nil, l.openError(err, l.timeout())
	}
	if k.unchanged(l.Path) {
		return k.db, k.file, nil
	}
	k.db.Close()
	k.db, k.file = nil, nil
	return nil, nil, nil
}

// unchanged says whether the file at path is the one kept, and its newest
// valid meta page is the commit this process made last.
func (k *kept) unchanged(path string) bool {
	held, err := k.file.Stat()
	if err != nil {
		return false
	}
	if now, err := os.Lstat(path); err != nil || !os.SameFile(held, now) {
		return false
	}
	head, err := readHead(k.file, held.Size())
	if err != nil || metaDamage(head) != "" {
		return false
	}
	_, m, valid := metas(head)
	meta, ok := current(m, valid)
	return ok && meta.txid == k.txid
}

// keep holds db (open on file, under the write lock, with nothing in
// progress) for the next write, and lets go of its locks.
func (k *kept) keep(db *bbolt.DB, file *os.File) error {
	var txid uint64
	if err := db.View(func(tx *bbolt.Tx) error { txid = uint64(tx.ID()); return nil }); err != nil {
		return err
	}
	fd := int(file.Fd())
	if err := retryEINTR(func() error { return unix.Flock(fd, unix.LOCK_UN) }); err != nil {
		return err
	}
	leaveGate(fd)
	k.db, k.file, k.txid = db, file, txid
	return nil
}
