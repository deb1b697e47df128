package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"go.etcd.io/bbolt"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
)

// maybeBackup refreshes the rolling backup when it is older than
// BackupEvery. It runs after a committed update, under the write lock, so
// the copy is the state just committed. Most calls cost one stat. A copy is
// made only of a file that passes bbolt's check, so the backup stays the last
// good ledger; failing to make one never fails the update it follows.
func (l *Ledger) maybeBackup(db *bbolt.DB, ledger *os.File) {
	every := l.BackupEvery
	if every < 0 {
		return
	}
	if every == 0 {
		every = DefaultBackupEvery
	}
	backup := storage.BackupPath(l.Path)
	if st, err := os.Lstat(backup); err == nil && clock.Since(clock.Kernel, st.ModTime()) < every /* the kernel wrote the time */ {
		return
	}
	_ = l.writeBackup(db, ledger, backup)
}

// writeBackup copies the committed ledger into memory, checks the copy (a
// private one: bbolt's check is never run over a file others can change),
// and writes it to the backup.
func (l *Ledger) writeBackup(db *bbolt.DB, ledger *os.File, backup string) error {
	mode := l.mode()
	if st, err := ledger.Stat(); err == nil {
		mode = st.Mode().Perm()
	}
	var copied bytes.Buffer
	if err := db.View(func(btx *bbolt.Tx) error { _, err := btx.WriteTo(&copied); return err }); err != nil {
		return err
	}
	data := copied.Bytes()
	if problems, err := checkImage(data); err != nil || len(problems) > 0 {
		return fmt.Errorf("not backed up: %w", errors.Join(append([]error{err}, problems...)...))
	}
	write := func(f *os.File) error { _, err := f.Write(data); return err }
	err := storage.WriteAtomically(backup, mode, write)
	if errors.Is(err, fs.ErrPermission) {
		// In a shared (sticky) directory only the backup's owner may
		// replace it: write into it instead. Readers of the backup hold
		// the ledger's lock, as this writer does, so none sees it half
		// written.
		err = writeInPlace(backup, data)
	}
	return err
}

// writeInPlace replaces the contents of the regular file at path.
func writeInPlace(path string, data []byte) error {
	f, err := storage.OpenRegular(path, os.O_WRONLY)
	if err != nil {
		return err
	}
	if err = storage.CheckWritable(f, path); err == nil {
		_, err = f.WriteAt(data, 0)
	}
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
