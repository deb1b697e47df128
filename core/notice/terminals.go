package notice

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/human"
)

// utmp records as glibc lays them out on 64-bit Linux (x86-64, arm64):
// 384 bytes, the login type at 0, the terminal at 8, the user at 44.
const (
	UtmpRecord      = 384
	UtmpLineAt      = 8
	UtmpUserAt      = 44
	UtmpFieldLen    = 32
	UtmpUserProcess = 7
)

// Login is one terminal a user is logged in on.
type Login struct {
	User string
	Line string // under /dev: "pts/3", "tty1"
}

// Logins reads the utmp file at path: who is logged in on which terminal.
func Logins(path string) ([]Login, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Login
	for off := 0; off+UtmpRecord <= len(data); off += UtmpRecord {
		rec := data[off : off+UtmpRecord]
		if int16(binary.NativeEndian.Uint16(rec)) != UtmpUserProcess {
			continue
		}
		out = append(out, Login{User: cString(rec[UtmpUserAt : UtmpUserAt+UtmpFieldLen]), Line: cString(rec[UtmpLineAt : UtmpLineAt+UtmpFieldLen])})
	}
	return out, nil
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// LoggedIn reports whether utmp lists user on any terminal.
func LoggedIn(utmp, user string) bool {
	logins, _ := Logins(utmp)
	for _, l := range logins {
		if l.User == user {
			return true
		}
	}
	return false
}

// terminalLine is what a utmp terminal may be: nothing outside /dev/pts and
// the /dev/tty* consoles.
var terminalLine = regexp.MustCompile(`^(pts/[0-9]+|tty[A-Za-z0-9]+|console)$`)

// TellTerminals writes text on every terminal user is logged in on, as
// write(1) does: only to a terminal that uid owns (a utmp line naming
// another's terminal is skipped), not where they said `mesg n`, and never
// waiting on a terminal that does not take the text at once. It returns
// how many terminals took it.
func TellTerminals(utmp string, uid int, user, text string) (int, error) {
	logins, err := Logins(utmp)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil // nobody logs logins here (a container, say)
	}
	if err != nil {
		return 0, fmt.Errorf("read logins: %w", err)
	}
	msg := []byte("\r\n\a" + human.Printable(text) + "\r\n")
	told := 0
	seen := map[string]bool{}
	for _, l := range logins {
		if l.User != user || seen[l.Line] || !terminalLine.MatchString(l.Line) {
			continue
		}
		seen[l.Line] = true
		if writeTerminal("/dev/"+l.Line, uid, msg) {
			told++
		}
	}
	return told, nil
}

// writeTerminal writes msg to the terminal at path when uid owns it and
// lets its group write (mesg y); it reports whether all of msg went out.
func writeTerminal(path string, uid int, msg []byte) bool {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || int(st.Uid) != uid || st.Mode&unix.S_IWGRP == 0 {
		return false
	}
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return false // not a terminal
	}
	// O_NONBLOCK: a terminal whose output is stopped (ctrl-s) or full
	// takes what fits now, or nothing.
	deadline := clock.Kernel.Now().Add(100 * time.Millisecond) // a write's bound, in real time
	for len(msg) > 0 && clock.Kernel.Now().Before(deadline) {
		n, err := unix.Write(fd, msg)
		if n > 0 {
			msg = msg[n:]
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			break
		}
	}
	return len(msg) == 0
}
