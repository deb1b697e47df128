package bolt

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"time"

	"go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/storage"
)

// bbolt's layout (go.etcd.io/bbolt/internal/common): a page is a 16-byte
// header (id u64, flags u16, count u16, overflow u32) and elements. A branch
// element is 16 bytes (pos, ksize: u32; child page: u64), a leaf element 16
// bytes (flags, pos, ksize, vsize: u32 each); an element's key lies pos bytes
// from the element, a leaf's value right after the key. A bucket's value is a
// 16-byte header (root page u64, sequence u64) followed, for an inline bucket
// (root 0), by a page holding its records. The meta page holds magic,
// version, page size, flags (u32 each), the root bucket (16 bytes), the
// freelist page, the high-water mark, the transaction id and a checksum of
// what comes before it (u64 each).
const (
	pageHeader      = 16
	pageElement     = 16
	bucketHeader    = 16
	branchPageFlag  = 0x01
	leafPageFlag    = 0x02
	metaPageFlag    = 0x04
	freelistFlag    = 0x10
	bucketLeafFlag  = 0x01
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	metaChecksumEnd = pageHeader + 56
	noFreelist      = ^uint64(0)
	maxTreeDepth    = 64
)

var le = binary.LittleEndian

type rawMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	pgid     uint64
	txid     uint64
}

// readRawMeta reads the meta page at the start of page, and whether it is
// valid as bbolt judges one: magic, version and checksum.
func readRawMeta(page []byte) (rawMeta, bool) {
	if len(page) < metaChecksumEnd+8 {
		return rawMeta{}, false
	}
	m := page[pageHeader:]
	if le.Uint32(m[0:]) != boltMagic || le.Uint32(m[4:]) != boltVersion {
		return rawMeta{}, false
	}
	h := fnv.New64a()
	h.Write(page[pageHeader:metaChecksumEnd])
	if h.Sum64() != le.Uint64(page[metaChecksumEnd:]) {
		return rawMeta{}, false
	}
	return rawMeta{pageSize: le.Uint32(m[8:]), root: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]),
		pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, true
}

// metas finds the page size and both meta pages the way bbolt does when it
// opens a file: the size from the first meta page, else from a second one
// sought at each power of two, else the system's.
func metas(data []byte) (pageSize int, m [2]rawMeta, valid [2]bool) {
	pageSize = os.Getpagesize()
	if first, ok := readRawMeta(data[:min(len(data), 0x1000)]); ok && len(data) >= 0x1000 {
		pageSize = int(first.pageSize)
	} else {
		for i := 0; i <= 14; i++ {
			pos := 1024 << i
			if pos >= len(data)-1024 {
				break
			}
			if second, ok := readRawMeta(data[pos:min(len(data), pos+0x1000)]); ok {
				pageSize = int(second.pageSize)
				break
			}
		}
	}
	if pageSize <= 0 || len(data) < 2*pageSize {
		return pageSize, m, valid
	}
	m[0], valid[0] = readRawMeta(data[:pageSize])
	m[1], valid[1] = readRawMeta(data[pageSize : 2*pageSize])
	return pageSize, m, valid
}

// current is the meta page bbolt uses: the valid one with the higher
// transaction id.
func current(m [2]rawMeta, valid [2]bool) (rawMeta, bool) {
	a, b := 0, 1
	if m[1].txid > m[0].txid {
		a, b = 1, 0
	}
	switch {
	case valid[a]:
		return m[a], true
	case valid[b]:
		return m[b], true
	}
	return rawMeta{}, false
}

// metaDamage says what is wrong with the meta pages of a file that has
// content: bbolt silently falls back to the older page when the newer one is
// damaged, losing the last commit (and the ids it handed out), so a writer
// must not carry on from there. head holds at least the file's first two
// pages, or all of it.
func metaDamage(head []byte) string {
	if bad, ok := damagedMeta(head); ok {
		return fmt.Sprintf("meta page %d is damaged: the file now reads as it was before its last write, which may be lost", bad)
	}
	return ""
}

// damagedMeta is the meta page that is damaged while the other is whole,
// which bbolt silently reads instead (see metaDamage).
func damagedMeta(head []byte) (page int, ok bool) {
	pageSize, _, valid := metas(head)
	switch {
	case len(head) < 2*pageSize:
		return 0, false // bbolt reports a short file itself
	case valid[0] == valid[1]:
		return 0, false // both whole, or none, which bbolt refuses itself
	case !valid[1]:
		return 1, true
	}
	return 0, true
}

// readHead reads the start of the open ledger file f of size bytes: enough
// for both meta pages of any page size chronos meets, or all of a smaller
// file.
func readHead(f io.ReaderAt, size int64) ([]byte, error) {
	head := make([]byte, min(size, int64(max(16<<10, 2*os.Getpagesize()))))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return head, nil
}

const errNoFreelist = "the meta page says the free page list is not stored, which chronos never does"

// checkPages walks a ledger file's bytes the way bbolt will read them —
// meta pages, the free page list, every page of every bucket's tree, every
// element and inline bucket — with every read bounds-checked. bbolt trusts
// the file: a page pointing past the end of a file cut short, a key said to
// run off its page or a page that leads back to itself would make it read
// outside the mapped file (a fault no recover catches in the goroutine bbolt's
// check starts) or recurse without end. safe says bbolt may read the file;
// problems says what is wrong, in words, whether or not it is safe.
func checkPages(data []byte) (problems []string, safe bool) {
	fail := func(format string, args ...any) ([]string, bool) {
		return append(problems, fmt.Sprintf(format, args...)), false
	}
	if len(data) == 0 {
		return nil, false
	}
	pageSize, m, valid := metas(data)
	if pageSize < 512 || pageSize > 1<<24 || pageSize&(pageSize-1) != 0 {
		return fail("no readable meta page gives a page size (found %d)", pageSize)
	}
	if len(data) < 2*pageSize {
		return fail("the file is %d bytes, shorter than its two meta pages", len(data))
	}
	if msg := metaDamage(data); msg != "" {
		problems = append(problems, msg)
	}
	meta, ok := current(m, valid)
	if !ok {
		return fail("neither meta page is valid: this is not a bbolt file, or both were damaged")
	}
	pages := uint64(len(data) / pageSize)
	if meta.pgid < 2 || meta.pgid > pages {
		return fail("the file is cut short or damaged: its meta page counts %d pages of %d bytes, the file holds %d", meta.pgid, pageSize, pages)
	}
	w := pageWalk{data: data, pageSize: uint64(pageSize), hwm: meta.pgid, seen: map[uint64]bool{}}
	if meta.freelist == noFreelist {
		return fail(errNoFreelist)
	}
	if msg := w.freelist(meta.freelist); msg != "" {
		return fail("%s", msg)
	}
	if msg := w.tree(meta.root, 0); msg != "" {
		return fail("%s", msg)
	}
	return append(problems, w.notes...), true
}

type pageWalk struct {
	data     []byte
	pageSize uint64
	hwm      uint64
	seen     map[uint64]bool
	notes    []string // damage that does not stop bbolt reading safely
}

// page returns the bytes of page id and its overflow pages, claiming them
// (a page reached twice is damage: it may lead back to itself).
func (w *pageWalk) page(id uint64) ([]byte, string) {
	if id < 2 || id >= w.hwm {
		return nil, fmt.Sprintf("a reference to page %d, outside the file's pages 2–%d", id, w.hwm-1)
	}
	p := w.data[id*w.pageSize:]
	overflow := uint64(le.Uint32(p[12:]))
	if overflow >= w.hwm-id {
		return nil, fmt.Sprintf("page %d runs %d pages past the end of the file", id, overflow)
	}
	for i := id; i <= id+overflow; i++ {
		if w.seen[i] {
			return nil, fmt.Sprintf("page %d is reached twice", i)
		}
		w.seen[i] = true
	}
	if got := le.Uint64(p); got != id && len(w.notes) < 10 {
		w.notes = append(w.notes, fmt.Sprintf("page %d says it is page %d", id, got))
	}
	return p[:(overflow+1)*w.pageSize], ""
}

func (w *pageWalk) freelist(id uint64) string {
	p, msg := w.page(id)
	if msg != "" {
		return "free page list: " + msg
	}
	return checkFreelist(p, id, w.hwm)
}

// checkFreelist checks the free page list on page id (p holds it and its
// overflow pages) of a file of hwm pages.
func checkFreelist(p []byte, id, hwm uint64) string {
	if le.Uint16(p[8:]) != freelistFlag {
		return fmt.Sprintf("page %d should hold the free page list but does not", id)
	}
	start, count := uint64(pageHeader), uint64(le.Uint16(p[10:]))
	if count == 0xFFFF {
		count, start = le.Uint64(p[pageHeader:]), pageHeader+8
	}
	if count > (uint64(len(p))-start)/8 {
		return fmt.Sprintf("the free page list says it holds %d pages, more than its page can", count)
	}
	for i := range count {
		if free := le.Uint64(p[start+8*i:]); free < 2 || free >= hwm {
			return fmt.Sprintf("the free page list names page %d, outside the file", free)
		}
	}
	return ""
}

// writerDamage is what a writer must not carry on from, read from the open
// ledger file f of size bytes: a damaged meta page (see metaDamage), or
// pages bbolt reads as it opens for writing — the free page list — that lie
// outside the file or do not hold together, which would make it fault or
// rebuild the list in a goroutine that crashes the process on damage.
func writerDamage(f io.ReaderAt, size int64) (string, error) {
	head, err := readHead(f, size)
	if err != nil {
		return "", err
	}
	if msg := metaDamage(head); msg != "" {
		return msg, nil
	}
	pageSize, m, valid := metas(head)
	meta, ok := current(m, valid)
	if !ok || pageSize < 512 || pageSize > 1<<24 {
		return "", nil // bbolt refuses it itself, reading nothing more
	}
	ps := uint64(pageSize)
	switch {
	case meta.pgid < 2 || meta.pgid > uint64(size)/ps:
		return fmt.Sprintf("the file is cut short: its meta page counts %d pages of %d bytes, the file holds %d", meta.pgid, ps, uint64(size)/ps), nil
	case meta.freelist == noFreelist:
		return errNoFreelist, nil
	case meta.freelist < 2 || meta.freelist >= meta.pgid:
		return fmt.Sprintf("the free page list is said to be on page %d, outside the file", meta.freelist), nil
	}
	page := make([]byte, ps)
	if _, err := f.ReadAt(page, int64(meta.freelist*ps)); err != nil {
		return "", err
	}
	if overflow := uint64(le.Uint32(page[12:])); overflow > 0 {
		if overflow >= meta.pgid-meta.freelist {
			return fmt.Sprintf("the free page list runs %d pages past the end of the file", overflow), nil
		}
		page = make([]byte, (overflow+1)*ps)
		if _, err := f.ReadAt(page, int64(meta.freelist*ps)); err != nil {
			return "", err
		}
	}
	return checkFreelist(page, meta.freelist, meta.pgid), nil
}

// tree checks the page tree rooted at id.
func (w *pageWalk) tree(id uint64, depth int) string {
	if depth > maxTreeDepth {
		return "the page tree is deeper than any ledger's"
	}
	p, msg := w.page(id)
	if msg != "" {
		return msg
	}
	count := uint64(le.Uint16(p[10:]))
	switch le.Uint16(p[8:]) {
	case branchPageFlag:
		if count == 0 {
			return fmt.Sprintf("branch page %d is empty", id)
		}
		if pageHeader+count*pageElement > uint64(len(p)) {
			return fmt.Sprintf("page %d says it holds %d elements, more than fit", id, count)
		}
		for i := range count {
			el := pageHeader + i*pageElement
			pos, ks := uint64(le.Uint32(p[el:])), uint64(le.Uint32(p[el+4:]))
			if el+pos+ks > uint64(len(p)) {
				return fmt.Sprintf("a key on page %d runs off the page", id)
			}
			if msg := w.tree(le.Uint64(p[el+8:]), depth+1); msg != "" {
				return msg
			}
		}
		return ""
	case leafPageFlag:
		return w.leaf(p, fmt.Sprintf("page %d", id), depth)
	}
	return fmt.Sprintf("page %d is neither a branch nor a leaf (flags %#x)", id, le.Uint16(p[8:]))
}

// leaf checks a leaf page (p, called where in messages), and the buckets
// its elements hold.
func (w *pageWalk) leaf(p []byte, where string, depth int) string {
	count := uint64(le.Uint16(p[10:]))
	if pageHeader+count*pageElement > uint64(len(p)) {
		return fmt.Sprintf("%s says it holds %d elements, more than fit", where, count)
	}
	for i := range count {
		el := pageHeader + i*pageElement
		flags, pos := le.Uint32(p[el:]), uint64(le.Uint32(p[el+4:]))
		ks, vs := uint64(le.Uint32(p[el+8:])), uint64(le.Uint32(p[el+12:]))
		if el+pos+ks+vs > uint64(len(p)) {
			return fmt.Sprintf("a record on %s runs off the page", where)
		}
		if flags&bucketLeafFlag == 0 {
			continue
		}
		v := p[el+pos+ks : el+pos+ks+vs]
		if len(v) < bucketHeader {
			return fmt.Sprintf("a bucket on %s is cut short", where)
		}
		if depth >= maxTreeDepth {
			return "buckets are nested deeper than any ledger's"
		}
		if root := le.Uint64(v); root != 0 {
			if msg := w.tree(root, depth+1); msg != "" {
				return msg
			}
			continue
		}
		inline := v[bucketHeader:]
		if len(inline) < pageHeader || le.Uint16(inline[8:]) != leafPageFlag {
			return fmt.Sprintf("an inline bucket on %s is damaged", where)
		}
		if msg := w.leaf(inline, "an inline bucket of "+where, depth+1); msg != "" {
			return msg
		}
	}
	return ""
}

// readFile reads the whole regular file at path, opened without following a
// link or blocking on a FIFO, with its stat.
func readFile(path string) ([]byte, fs.FileInfo, error) {
	f, err := storage.OpenRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return readAll(f)
}

func readAll(f *os.File) ([]byte, fs.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<62))
	return data, st, err
}

// memFile is a private, in-memory file holding data: nobody else can change
// it while bbolt maps it.
func memFile(data []byte) (*os.File, error) {
	var f *os.File
	if fd, err := unix.MemfdCreate("chronos-ledger", unix.MFD_CLOEXEC); err == nil {
		f = os.NewFile(uintptr(fd), "chronos-ledger")
	} else {
		// No memfd: an unnamed file in this user's temporary directory.
		if f, err = os.CreateTemp("", "chronos-ledger-*"); err != nil {
			return nil, err
		}
		os.Remove(f.Name())
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openImage opens a private copy of a ledger file's bytes with bbolt, once
// checkPages has found them safe to read. With readOnly false an empty
// image is a new ledger to build.
func openImage(data []byte, readOnly bool) (*bbolt.DB, *os.File, error) {
	f, err := memFile(data)
	if err != nil {
		return nil, nil, err
	}
	// bbolt closes the file it is given; keep a descriptor of our own to
	// read back what it wrote.
	dup, err := unix.Dup(int(f.Fd()))
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	mine := os.NewFile(uintptr(dup), f.Name())
	db, err := bbolt.Open(f.Name(), 0o600, &bbolt.Options{ReadOnly: readOnly, Timeout: time.Second,
		OpenFile: func(string, int, fs.FileMode) (*os.File, error) { return f, nil }})
	if err != nil {
		f.Close()
		mine.Close()
		return nil, nil, err
	}
	return db, mine, nil
}

// viewImage runs fn over a read-only transaction of the ledger file's bytes,
// when they are safe to read; a panic or fault becomes an error.
func viewImage(data []byte, fn func(*bbolt.Tx) error) error {
	if _, safe := checkPages(data); !safe {
		return fmt.Errorf("%w: the file's pages do not hold together", storage.ErrDamaged)
	}
	var err error
	guard(func() error {
		db, mine, oerr := openImage(data, true)
		if oerr != nil {
			return oerr
		}
		mine.Close()
		defer db.Close()
		return db.View(fn)
	}, func(msg string) { err = fmt.Errorf("%w: %s", storage.ErrDamaged, msg) })
	return err
}
