// Package bolt is the ledger's file engine: one bbolt file that every
// chronos process (each TUI, the headless monitor, one-shot commands) reads and
// writes. No process keeps it locked: each operation opens the file, runs one
// transaction and closes it, because bbolt holds an exclusive flock for as
// long as a read-write handle is open. Root, a guarded ledger's only writer,
// keeps its handle open but unlocked between writes (keep.go). Writes of
// one process that arrive while another is under way commit together
// (group commit, batch.go): a busy keeper pays one lock and one fdatasync
// for many of its callers.
package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/storage"
)

// DefaultTimeout is how long an operation waits for another process's lock.
const DefaultTimeout = 3 * time.Second

// DefaultBackupEvery is how often, at most, a successful update refreshes
// the rolling backup (<path>.backup) of the ledger.
const DefaultBackupEvery = 10 * time.Minute

// Ledger is the path of a ledger file and how to open it. It holds no open
// handle (KeepOpen aside, whose handle is the process's, by path), so a
// Ledger value is cheap and safe to share between goroutines.
type Ledger struct {
	Path    string
	Timeout time.Duration
	// Mode is the permission a newly created file gets (umask aside, which
	// Ledger undoes by chmod-ing after creation). Zero means 0600.
	Mode fs.FileMode
	// BackupEvery is how old <path>.backup may grow before an update
	// replaces it with a copy of the ledger it just wrote. Zero means
	// DefaultBackupEvery; negative turns the backup off.
	BackupEvery time.Duration
	// Warn, when set, hears what a read found wrong that does not stop it:
	// a damaged newest meta page, which makes bbolt read the file as it was
	// before its last write. Writers refuse such a file (see
	// checkForWrite); a reader still shows what can be read, with the
	// warning.
	Warn func(msg string)
	// KeepOpen keeps the file open, unlocked, between this process's
	// writes, for a ledger root alone writes (a guarded one: New sets it
	// for root's processes): see keep.go. Another process's write costs
	// the next write a fresh open, nothing more.
	KeepOpen bool
}

// New returns a ledger at path with the default timeout and a mode that suits
// its directory: in a setgid (shared, group-owned) directory the group gets
// what the directory gives it (0660 in an open one's, 0640 in a guarded
// one's, which members only read), else 0600. Root's processes keep a
// guarded ledger open between their writes (KeepOpen): root is its only
// writer, its keeper above all.
func New(path string) *Ledger {
	l := &Ledger{Path: path, Timeout: DefaultTimeout, Mode: 0o600}
	if st, err := os.Stat(filepath.Dir(path)); err == nil && st.Mode()&fs.ModeSetgid != 0 {
		l.Mode |= st.Mode().Perm() & 0o060
		l.KeepOpen = os.Geteuid() == 0 && st.Mode().Perm()&0o020 == 0
	}
	return l
}

// Update runs fn in one read-write transaction, creating the file if needed.
// fn's error rolls the transaction back and is returned as it is. Updates
// of one process that arrive together share a transaction (see batch.go):
// fn may run more than once, and its error is its caller's alone. A ctx
// that has ended stops it before it starts; once begun, a transaction runs
// to its end (bbolt's cannot be interrupted, and the lock's wait is bounded
// by Timeout).
func (l *Ledger) Update(ctx context.Context, fn func(*storage.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ledger %s: %w", l.Path, err)
	}
	return batcherFor(l.Path).do(l, fn)
}

// View runs fn in one read-only transaction. A ledger that does not exist yet
// reads as empty; View never creates the file. A ledger whose directory does
// not exist is a mistyped path, not an empty ledger: View says so, as a
// writer's open would. ctx is as for Update.
func (l *Ledger) View(ctx context.Context, fn func(*storage.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ledger %s: %w", l.Path, err)
	}
	if l.unwritten() {
		if _, err := os.Stat(filepath.Dir(l.Path)); errors.Is(err, fs.ErrNotExist) {
			return &fs.PathError{Op: "open", Path: l.Path, Err: syscall.ENOENT}
		}
		if err := l.notLost(); err != nil {
			return err
		}
		return fn(&storage.Tx{})
	}
	return l.view(fn, l.waitFor(ctx))
}

// Changes notices other processes' writes to the file: see Watch.
func (l *Ledger) Changes(ctx context.Context, poll time.Duration) <-chan struct{} {
	return Watch(ctx, l.Path, poll)
}

// Version is the file's stamp, in a comparable form.
func (l *Ledger) Version() string {
	s := StampOf(l.Path)
	return fmt.Sprintf("%d/%d/%d", s.ModTime.UnixNano(), s.Size, s.Inode)
}

// String is the file's path.
func (l *Ledger) String() string { return l.Path }

// Private reports whether the ledger is this user's alone: the file is
// theirs and nobody else may write it (before it exists: the mode it will
// be created with says so). A shared ledger is not.
func (l *Ledger) Private() bool {
	st, err := os.Lstat(l.Path)
	if err != nil {
		return l.mode()&0o022 == 0
	}
	uid, _, _ := storage.OwnerOf(st)
	return uid == os.Geteuid() && st.Mode().Perm()&0o022 == 0
}

// unwritten reports whether the ledger has no content yet: no file, or an
// empty one, which a writer killed between creating the file and writing
// its first pages leaves behind. bbolt would try to initialise an empty file
// even when opened read-only, and fail ("write: bad file descriptor"); the
// next writer initialises it.
func (l *Ledger) unwritten() bool {
	st, err := os.Lstat(l.Path)
	return errors.Is(err, fs.ErrNotExist) || (err == nil && st.Mode().IsRegular() && st.Size() == 0)
}

// notLost checks, for a ledger that is missing or empty, that its rolling
// backup is too: a backup that holds a ledger means the ledger lost its
// contents, and starting it afresh would hand out its ids again.
func (l *Ledger) notLost() error {
	if st, err := os.Lstat(storage.BackupPath(l.Path)); err == nil && st.Size() > 0 {
		return fmt.Errorf("%w: %s is missing or empty, but its backup %s holds a ledger: "+
			"run `chronos doctor --repair` to restore it (or remove the backup to start afresh)", storage.ErrDamaged, l.Path, storage.BackupPath(l.Path))
	}
	return nil
}

// view runs fn in one read-only transaction (writes go through commit).
func (l *Ledger) view(fn func(*storage.Tx) error, wait time.Duration) (err error) {
	// bbolt panics on some kinds of damage (a page pointing outside the
	// file, say), and reading a mapped page past the end of a file cut
	// short faults. A damaged file must give an error, never a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var db *bbolt.DB
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s (%v)", storage.ErrDamaged, l.Path, r)
			// Let go of the file, its mapping and its locks (see
			// withWriter).
			if db != nil {
				db.Close()
			}
		}
	}()
	db, file, err := l.open(true, wait)
	if err != nil {
		return err
	}
	l.warnRolledBack(file)
	txErr := db.View(func(btx *bbolt.Tx) error { return runTx(btx, fn) })
	closeErr := db.Close()
	if txErr != nil {
		return txErr
	}
	if closeErr != nil {
		return fmt.Errorf("close ledger %s: %w", l.Path, closeErr)
	}
	return nil
}

func (l *Ledger) mode() fs.FileMode {
	if l.Mode == 0 {
		return 0o600
	}
	return l.Mode
}

// open opens the ledger with bbolt, and returns with it the file it holds
// open (closed with the database).
func (l *Ledger) open(readOnly bool, timeout time.Duration) (*bbolt.DB, *os.File, error) {
	for tries := 1; ; tries++ {
		db, file, replaced, err := l.openOnce(readOnly, timeout)
		if !replaced {
			return db, file, err
		}
		// A repair renamed a new file over the path while this process
		// waited for the old file's lock: what it would read or write
		// there is gone. Open the file now at the path.
		db.Close()
		if tries == maxOpenTries {
			return nil, nil, fmt.Errorf("%w: %s keeps being replaced while it is opened", storage.ErrBusy, l.Path)
		}
	}
}

// maxOpenTries bounds how often an open starts again because the file at
// the path changed under it: a repair does that once; only someone swapping
// files in a loop does it again and again.
const maxOpenTries = 10

func (l *Ledger) timeout() time.Duration {
	if l.Timeout <= 0 {
		return DefaultTimeout
	}
	return l.Timeout
}

// waitFor is how long a read waits for another process's lock: Timeout,
// or less when ctx ends sooner (a monitor's look at a deadline waits
// milliseconds, not seconds).
func (l *Ledger) waitFor(ctx context.Context) time.Duration {
	t := l.timeout()
	if dl, ok := ctx.Deadline(); ok {
		t = min(t, max(clock.Until(clock.Kernel, dl), time.Millisecond))
	}
	return t
}

func (l *Ledger) openOnce(readOnly bool, timeout time.Duration) (db *bbolt.DB, file *os.File, replaced bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			// bbolt panicked opening it. A writer checked beforehand what
			// bbolt reads as it opens (see checkForWrite) and a reader's
			// open reads only checked meta pages, so this is not expected;
			// let go of the locks at least.
			if file != nil {
				file.Close()
			}
			panic(r)
		}
	}()
	// The file is opened without following a link or blocking on a FIFO,
	// and locked here, before bbolt's own flock on the same open file (which
	// then succeeds at once): see lockLedger. A writer checks what it opened
	// before bbolt writes a byte.
	openFile := func(string, int, fs.FileMode) (*os.File, error) {
		f, err := l.openFile(readOnly)
		if err != nil {
			return nil, err
		}
		if err := lockLedger(f, !readOnly, timeout); err != nil {
			f.Close()
			return nil, err
		}
		if !readOnly {
			if err := l.checkForWrite(f); err != nil {
				f.Close()
				return nil, err
			}
		}
		file = f
		return f, nil
	}
	db, err = bbolt.Open(l.Path, l.mode(), &bbolt.Options{Timeout: timeout, ReadOnly: readOnly, OpenFile: openFile})
	if err == nil && file != nil {
		held, herr := file.Stat()
		now, nerr := os.Lstat(l.Path)
		if herr == nil && nerr == nil && !os.SameFile(held, now) {
			return db, file, true, nil
		}
	}
	return db, file, false, l.openError(err, timeout)
}

// openFile opens the ledger file, creating it (exclusively, with the
// ledger's mode) when a writer finds none.
func (l *Ledger) openFile(readOnly bool) (*os.File, error) {
	if readOnly {
		return storage.OpenRegular(l.Path, os.O_RDONLY)
	}
	for tries := 1; ; tries++ {
		f, err := storage.OpenRegular(l.Path, os.O_RDWR)
		if !errors.Is(err, fs.ErrNotExist) || tries == maxOpenTries {
			return f, err
		}
		if err := l.notLost(); err != nil {
			return nil, err
		}
		f, err = storage.CreateNew(l.Path, l.mode())
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
		// Another process created it first: open that one.
	}
}

// checkForWrite refuses to write a file this process should not (see
// checkWritable), an empty one whose backup says it lost its contents, and
// one bbolt should not open for writing (see writerDamage): with its newest
// meta page damaged, bbolt would carry on from the commit before, handing
// out again the ids that commit gave.
func (l *Ledger) checkForWrite(f *os.File) error {
	if err := storage.CheckWritable(f, l.Path); err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return l.notLost()
	}
	msg, err := writerDamage(f, st.Size())
	if err != nil {
		return fmt.Errorf("read ledger %s: %w", l.Path, err)
	}
	if msg != "" {
		return fmt.Errorf("%w: %s: %s; run `chronos doctor`", storage.ErrDamaged, l.Path, msg)
	}
	return nil
}

// warnRolledBack tells Warn when the open file f reads as it was before its
// last write, because its newest meta page is damaged.
func (l *Ledger) warnRolledBack(f *os.File) {
	if l.Warn == nil {
		return
	}
	st, err := f.Stat()
	if err != nil {
		return
	}
	head, err := readHead(f, st.Size())
	if err != nil {
		return
	}
	if page, ok := damagedMeta(head); ok {
		l.Warn(fmt.Sprintf("the ledger's newest write may be missing: meta page %d of %s is damaged; run `chronos doctor`", page, l.Path))
	}
}

func (l *Ledger) openError(err error, timeout time.Duration) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrTimeout), errors.Is(err, errLockTimeout):
		return fmt.Errorf("%w: another chronos process has held %s for %s", storage.ErrBusy, l.Path, timeout)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
		return fmt.Errorf("%w: %s (%w)", storage.ErrDamaged, l.Path, err)
	case errors.Is(err, storage.ErrDamaged), errors.Is(err, storage.ErrUnsafeFile):
		return err
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return fmt.Errorf("open ledger %s: %w: %w (is the file read-only, or a shared ledger of a group you are not in?)", l.Path, storage.ErrReadOnly, err)
	default:
		// bbolt reports short or foreign files with plain errors ("file size
		// too small", "invalid argument" from mmap).
		if st, statErr := os.Lstat(l.Path); statErr == nil && st.Size() > 0 && st.Size() < 2*int64(os.Getpagesize()) {
			return fmt.Errorf("%w: %s (%w)", storage.ErrDamaged, l.Path, err)
		}
		return fmt.Errorf("open ledger %s: %w", l.Path, err)
	}
}

// prepare creates the buckets of a new file, so that doctor finds every
// bucket of the layout in any ledger written once.
func prepare(btx *bbolt.Tx) error {
	if btx.Bucket(storage.BucketMeta) == nil && len(bucketNames(btx)) > 0 {
		return fmt.Errorf("%w: a bbolt file, but not a chronos ledger", storage.ErrDamaged)
	}
	for _, name := range storage.Buckets() {
		if _, err := btx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// runTx runs fn over one bbolt transaction, refusing a bbolt file that
// holds buckets but no chronos meta bucket: somebody else's database.
func runTx(btx *bbolt.Tx, fn func(*storage.Tx) error) error {
	if btx.Bucket(storage.BucketMeta) == nil && len(bucketNames(btx)) > 0 {
		return fmt.Errorf("%w: a bbolt file, but not a chronos ledger", storage.ErrDamaged)
	}
	tx, err := storage.NewTx(boltTx{btx})
	if err != nil {
		return err
	}
	return fn(tx)
}

// Check runs bbolt's consistency check over the whole file and returns every
// problem it finds. It checks a private copy of the file, read under the
// readers' lock, once its pages are found to hold together: nothing another
// process does to the file meanwhile, and no damage, can make it crash.
func (l *Ledger) Check() (problems []error, err error) {
	if l.unwritten() {
		return nil, nil
	}
	data, err := l.readLocked(nil)
	if err != nil {
		return nil, err
	}
	return checkImage(data)
}

// checkImage is bbolt's check of a ledger file's bytes.
func checkImage(data []byte) (problems []error, err error) {
	if msgs, safe := checkPages(data); !safe {
		for _, m := range msgs {
			problems = append(problems, errors.New(m))
		}
		return problems, nil
	}
	err = viewImage(data, func(btx *bbolt.Tx) error {
		for e := range btx.Check() {
			problems = append(problems, e)
		}
		return nil
	})
	return problems, err
}

// readLocked reads the whole ledger file under the readers' lock, and runs
// also (when not nil) before it lets go.
func (l *Ledger) readLocked(also func()) ([]byte, error) {
	f, err := storage.OpenRegular(l.Path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := lockLedger(f, false, l.timeout()); err != nil {
		return nil, l.openError(err, l.timeout())
	}
	data, _, err := readAll(f)
	if also != nil {
		also()
	}
	return data, err
}
