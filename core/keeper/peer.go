package keeper

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Peer is who is at the other end of a connection, as the kernel recorded
// them when they connected: nothing a client sends can change it.
type Peer struct {
	PID, UID, GID int
	Groups        []int // supplementary groups (SO_PEERGROUPS)
}

// In reports whether the peer is in group gid, as its process was when it
// connected: its primary group or a supplementary one.
func (p Peer) In(gid int) bool { return p.GID == gid || slices.Contains(p.Groups, gid) }

// peerOf reads the peer's credentials of a Unix connection.
func peerOf(conn *net.UnixConn) (Peer, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var p Peer
	var credErr error
	err = raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		if cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); credErr != nil {
			return
		}
		p = Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}
		p.Groups, credErr = peerGroups(int(fd))
	})
	if err = errors.Join(err, credErr); err != nil {
		return Peer{}, fmt.Errorf("the caller's credentials: %w", err)
	}
	return p, nil
}

// peerGroups is SO_PEERGROUPS (Linux 4.13), which x/sys/unix does not
// wrap: the kernel answers ERANGE with the size it needs.
func peerGroups(fd int) ([]int, error) {
	buf := make([]uint32, 64)
	for {
		size := uint32(len(buf) * 4)
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0)
		switch {
		case errno == unix.ERANGE && int(size/4) > len(buf):
			buf = make([]uint32, size/4)
			continue
		case errno != 0:
			return nil, fmt.Errorf("SO_PEERGROUPS: %w", errno)
		}
		groups := make([]int, size/4)
		for i := range groups {
			groups[i] = int(buf[i])
		}
		return groups, nil
	}
}
