package bolt

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A reader that comes while a writer waits at the gate for the readers
// before it to finish waits behind the writer: otherwise a stream of
// readers keeps the writer out past its timeout. The reader is another
// process, as waiting readers are (one process lets one of its goroutines
// wait in the kernel at a time).
func TestReaderWaitsBehindWaitingWriter(t *testing.T) {
	// Serial: it holds and waits on locks, and counts this process's
	// waiting goroutines (waitingInProcess), which other tests' waits would
	// add to; beside them it would also hold their waits in line.
	l := newLedger(t)
	addOne(t, l)
	inside := lockedFile(t, l.Path, os.O_RDONLY, unix.LOCK_SH) // a reader in its transaction

	writer, err := os.OpenFile(l.Path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer writer.Close()
	wrote := make(chan error, 1)
	go func() { wrote <- lockLedger(writer, true, time.Minute) }()
	waitUntil(t, "the writer waits for the readers' flock", func() bool { return waitingFor(t, l.Path, "FLOCK") })

	reader := exec.Command(os.Args[0], "-test.run=^TestLockHelperReader$")
	reader.Env = append(os.Environ(), "CHRONOS_LOCK_HELPER="+l.Path)
	out, err := reader.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "reader: lock timeout", "a reader overtook a writer waiting at the gate")

	inside.Close()
	require.NoError(t, <-wrote)
}

// TestLockHelperReader is the reader process of the test above: it tries
// for half a second to read-lock the ledger named in its environment.
func TestLockHelperReader(t *testing.T) {
	// Serial: it holds and waits on locks, and counts this process's
	// waiting goroutines (waitingInProcess), which other tests' waits would
	// add to; beside them it would also hold their waits in line.
	path := os.Getenv("CHRONOS_LOCK_HELPER")
	if path == "" {
		t.Skip("a helper process for TestReaderWaitsBehindWaitingWriter")
	}
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	fmt.Printf("reader: %v\n", lockLedger(f, false, 500*time.Millisecond))
}

// Two goroutines of one process wait for the ledger: one in the kernel
// for the gate, and one that passed the gate as a reader but finds the
// flock taken. The second must not keep the gate while it waits behind
// the first to wait in the kernel, or each waits for the other until one
// times out. (The benchmark of 200 waiters found this: its release and its
// probe timed out together.)
func TestWaitersOfOneProcessDoNotBlockEachOther(t *testing.T) {
	// Serial: it holds and waits on locks, and counts this process's
	// waiting goroutines (waitingInProcess), which other tests' waits would
	// add to; beside them it would also hold their waits in line.
	l := newLedger(t)
	addOne(t, l)
	writing := lockedFile(t, l.Path, os.O_RDWR, unix.LOCK_EX) // a plain bbolt writer in
	passing, err := os.Open(l.Path)                           // a reader passing the gate
	require.NoError(t, err)
	defer passing.Close()
	gate := gateLock(false)
	require.NoError(t, unix.FcntlFlock(passing.Fd(), unix.F_OFD_SETLK, &gate))

	first, err := os.OpenFile(l.Path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer first.Close()
	firstIn := make(chan error, 1)
	go func() { firstIn <- lockLedger(first, true, 5*time.Second) }()
	waitUntil(t, "the writer waits for the gate", func() bool { return waitingFor(t, l.Path, "OFDLCK") })

	second, err := os.Open(l.Path)
	require.NoError(t, err)
	defer second.Close()
	secondIn := make(chan error, 1)
	go func() { secondIn <- lockLedger(second, false, 5*time.Second) }()
	waitUntil(t, "the reader waits", func() bool { return waitingInProcess() == 2 })

	passing.Close()
	writing.Close()
	require.NoError(t, <-firstIn)
	first.Close()
	require.NoError(t, <-secondIn)
}

// lockedFile opens path and flocks it as how says, as another process would.
func lockedFile(t *testing.T, path string, flag, how int) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, flag, 0)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	require.NoError(t, unix.Flock(int(f.Fd()), how))
	return f
}

// waitingFor reports whether someone waits for a lock of kind (FLOCK,
// OFDLCK) on the file at path, as /proc/locks shows: "1: -> FLOCK ...".
func waitingFor(t *testing.T, path, kind string) bool {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	locks, err := os.ReadFile("/proc/locks")
	require.NoError(t, err)
	for _, line := range strings.Split(string(locks), "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && f[1] == "->" && f[2] == kind && strings.HasSuffix(f[6], fmt.Sprintf(":%d", st.Ino)) {
			return true
		}
	}
	return false
}

// waitingInProcess counts this process's goroutines that wait in
// lockLedger's select: for their kernel wait's result, or for their turn
// to wait in the kernel.
func waitingInProcess() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[select") && strings.Contains(g, "bolt.lockLedger(") {
			n++
		}
	}
	return n
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
	}
}
