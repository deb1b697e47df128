package bolt

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core/clock"
)

// Stamp identifies one version of the ledger file cheaply, without opening
// it: a writer changes the modification time or size, and a repair that
// replaces the file changes the inode.
type Stamp struct {
	ModTime time.Time
	Size    int64
	Inode   uint64
}

// StampOf returns the file's stamp; a missing file has the zero stamp.
func StampOf(path string) Stamp {
	st, err := os.Stat(path)
	if err != nil {
		return Stamp{}
	}
	s := Stamp{ModTime: st.ModTime(), Size: st.Size()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.Inode = sys.Ino
	}
	return s
}

// Watch sends on the returned channel whenever another process may have
// written the ledger. It listens for writers closing the file (inotify on the
// directory, so a replaced file is still seen) and also compares stamps every
// poll interval, since a file's time can be too coarse to tell two quick
// writes apart and inotify may be unavailable. Sends never block: a pending
// notice already says "look again". The channel closes when ctx ends.
func Watch(ctx context.Context, path string, poll time.Duration) <-chan struct{} {
	out := make(chan struct{}, 1)
	notify := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	events := inotifyEvents(ctx, path)
	go func() {
		defer close(out)
		last := StampOf(path)
		tick := clock.Kernel.NewTicker(poll) // looking at a file, in real time
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-events:
				last = StampOf(path)
				notify()
			case <-tick.C():
				if s := StampOf(path); s != last {
					last = s
					notify()
				}
			}
		}
	}()
	return out
}

// inotifyEvents returns a channel that receives when a file named like path
// is closed after writing, created or moved into place. It returns a nil
// channel (which never receives) when inotify cannot be used.
func inotifyEvents(ctx context.Context, path string) <-chan struct{} {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	dir, name := filepath.Dir(path), filepath.Base(path)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO|unix.IN_CREATE); err != nil {
		unix.Close(fd)
		return nil
	}
	// A non-blocking descriptor wrapped in an os.File goes through Go's
	// poller, so closing the file ends the blocked Read below.
	f := os.NewFile(uintptr(fd), "inotify")
	ch := make(chan struct{}, 1)
	go func() {
		<-ctx.Done()
		f.Close()
	}()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				if cString(nameBytes) == name {
					select {
					case ch <- struct{}{}:
					default:
					}
				}
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}()
	return ch
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
