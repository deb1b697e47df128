package keeper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

// DefaultReadTimeout is how long a connection may take to send its
// request before the keeper drops it.
const DefaultReadTimeout = 10 * time.Second

// Server is the keeper: it runs each caller's request through Client as
// the caller, who must be root or in group GID.
type Server struct {
	// Client is the keeper's own (root's) client of the guarded ledger.
	Client *core.Client
	// GID and Group are the group whose members may write through it.
	GID   int
	Group string
	// ReadTimeout bounds the wait for a request, by Client's clock; zero
	// means DefaultReadTimeout.
	ReadTimeout time.Duration
	// Log hears what went wrong with a connection (nil: nothing).
	Log func(msg string)
	// MaxConns, MaxPerUID and MaxActive bound connections open at once,
	// one user's open connections, and one user's requests under way;
	// zero means DefaultMaxConns, DefaultMaxPerUID, DefaultMaxActive.
	MaxConns, MaxPerUID, MaxActive int
	// Rate is one user's requests served a second, after a burst of
	// DefaultBurst (root's are not paced); zero means DefaultRate, and a
	// negative rate none.
	Rate float64

	once  sync.Once
	lim   *limits
	names names
	snaps snapshotCache
}

// errWaiterGone is why a waiter left the line: its connection closed.
var errWaiterGone = errors.New("its connection to the keeper closed")

// Serve answers connections on ln, each in a goroutine of its own, until
// ctx ends, when it closes ln. A request under way then still finishes; a
// waiter's connection stays open (the process ends it), so that its
// request keeps its place for the next keeper.
func (s *Server) Serve(ctx context.Context, ln *Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				ln.Close() // once it returns, the socket is gone
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of descriptors, say: let go of the processor a while.
			s.log(fmt.Sprintf("keeper: accept on %s: %v", ln.Path(), err))
			<-clock.Kernel.After(50 * time.Millisecond) // pacing, not a time of the books
			continue
		}
		peer, peerErr := peerOf(conn)
		done, refusal := s.admit(peer, peerErr)
		go func() {
			if refusal != nil {
				s.refuse(conn, refusal)
				return
			}
			defer done()
			s.handle(conn, peer, peerErr)
		}()
	}
}

func (s *Server) log(msg string) {
	if s.Log != nil {
		s.Log(msg)
	}
}

// admit counts a connection just accepted, in the order they came, or
// refuses it over the bounds (see limits). It runs in the accepting loop,
// so it only counts: the refusal is written and the connection closed in
// a goroutine of its own (see refuse), and under a member's flood of
// connections the loop still reaches everyone else's at once. done
// uncounts an admitted connection.
func (s *Server) admit(peer Peer, peerErr error) (done func(), refusal error) {
	l := s.limits()
	if err := l.open(); err != nil {
		return nil, err
	}
	uid := peer.UID // 0 (uncounted) when unread: handle refuses it
	if peerErr != nil {
		uid = 0
	}
	leave, err := l.join(uid)
	if err != nil {
		l.closed()
		return nil, err
	}
	return func() { leave(); l.closed() }, nil
}

// refuse tells a connection over the bounds why, and closes it: a small
// reply fits the socket's buffer, so it does not wait on the caller.
func (s *Server) refuse(conn *net.UnixConn, why error) {
	_ = WriteFrame(conn, errorReply(why))
	conn.Close()
}

// handle answers one connection: who it is (peer, as the kernel said when
// it was accepted, or why that could not be read), its request, the reply.
func (s *Server) handle(conn *net.UnixConn, peer Peer, peerErr error) {
	defer conn.Close()
	if peerErr != nil {
		s.log("keeper: " + peerErr.Error())
		return
	}
	if peer.UID != 0 && !peer.In(s.GID) {
		_ = WriteFrame(conn, errorReply(fmt.Errorf("%w: %s (uid %d) is not in the group %s: ask root to add you (sudo usermod -aG %s %s), then log in again",
			ErrRefused, s.names.of(peer.UID), peer.UID, s.Group, s.Group, s.names.of(peer.UID))))
		return
	}
	var req Request
	if err := s.read(conn, &req); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%w: a frame cut short", ErrRefused)
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
			_ = WriteFrame(conn, errorReply(err))
		}
		return
	}
	// A wait takes its place in line at the rate too (joining is a
	// write), but no turn: it then holds no lock.
	done, err := s.limits().turn(peer.UID, !waits(req), kindOf(req))
	if err != nil {
		_ = WriteFrame(conn, errorReply(err))
		return
	}
	defer done()
	if reads(req) {
		s.serveRead(conn, req)
		return
	}
	_ = WriteFrame(conn, s.do(conn, peer, req))
}

// kindOf says whether req frees room, for its turn.
func kindOf(req Request) kind {
	if req.Op == OpRelease || req.Op == OpCancel {
		return frees
	}
	return takes
}

// waits says whether req waits in line, holding no lock while it does:
// it takes no turn of its user's.
func waits(req Request) bool {
	return req.Op == OpWait || req.Op == OpCreate && req.Create != nil && req.Create.Wait
}

// read reads the request, dropping a connection that sends none within
// ReadTimeout.
func (s *Server) read(conn *net.UnixConn, req *Request) error {
	timeout := s.ReadTimeout
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	timer := s.Client.Clock().NewTimer(timeout)
	defer timer.Stop()
	read := make(chan struct{})
	defer close(read)
	go func() {
		select {
		case <-timer.C():
			conn.Close()
		case <-read:
		}
	}()
	if err := ReadFrame(conn, req); err != nil {
		return err
	}
	if req.V != Version {
		return fmt.Errorf("%w: protocol version %d; this keeper speaks %d (run the same chronos as root's monitor)", ErrRefused, req.V, Version)
	}
	return nil
}

// do runs req as peer and returns the final reply.
func (s *Server) do(conn *net.UnixConn, peer Peer, req Request) Reply {
	ctx, leave := context.WithCancelCause(context.Background())
	defer leave(nil)
	c := s.Client.As(ctx, domain.Identity{UID: peer.UID, User: s.names.of(peer.UID)})
	done := Reply{V: Version, Kind: ReplyDone}
	var err error
	switch req.Op {
	case OpRelease:
		var p core.Partition
		p, err = c.Release(req.ID)
		done.Partition = &p.Partition
	case OpExtend:
		var p core.Partition
		p, err = c.Extend(req.ID, req.Duration)
		done.Partition = &p.Partition
	case OpHold:
		var u domain.BookingUsage
		u, err = c.Hold(req.ID, req.Duration, req.Reason)
		done.Usage = &u
	case OpCancel:
		err = c.Cancel(req.ID)
	case OpDismiss:
		err = c.DismissNotice(req.ID, req.Seq)
	case OpWrapper:
		err = recordRun(c, peer, req)
	case OpSignal:
		done.Claimed, err = claimRunSignal(c, peer, req)
	case OpEnqueue:
		if req.Create == nil {
			err = fmt.Errorf("%w: an enqueue without its booking", ErrRefused)
			break
		}
		var p *core.Partition
		var e *admission.QueueEntry
		p, e, err = c.Enqueue(req.Create.request(), admission.WaitOptions{Timeout: req.Create.Timeout, PID: peer.PID})
		if p != nil {
			done.Partition, done.Room = &p.Partition, &p.Room
		}
		done.Entry = e
	case OpHandOver:
		var r domain.Request
		r, err = handOver(c, peer, req.ID, req.PID)
		done.Entry = &admission.QueueEntry{Request: r}
	case OpWait:
		var p *core.Partition
		if p, err = s.waitFor(ctx, leave, conn, c, peer, req.ID); p != nil {
			done.Partition, done.Room = &p.Partition, &p.Room
		}
	case OpCreate:
		if req.Create == nil {
			err = fmt.Errorf("%w: a create without its booking", ErrRefused)
			break
		}
		var p *core.Partition
		if p, err = s.create(ctx, leave, conn, c, peer, *req.Create); p != nil {
			done.Partition, done.Room = &p.Partition, &p.Room
		}
	default:
		err = fmt.Errorf("%w: unknown request %s", ErrRefused, human.Quote(string(req.Op)))
	}
	if err != nil {
		return errorReply(err)
	}
	return done
}

// request is the booking cr asks for.
func (cr Create) request() core.Request {
	return core.Request{Host: cr.Host, Device: cr.Device, Devices: cr.Devices, Count: cr.Count, Memory: human.Memory{Fraction: cr.Fraction, Bytes: cr.Bytes},
		Duration: cr.Duration, Compute: cr.Compute, For: cr.For, Start: cr.Start}
}

// create books cr for the caller, or with cr.Wait waits in line with the
// caller's process as the waiter, telling it its place as it changes. The
// connection closing (the caller stopped, or was killed) takes the request
// out of the line.
func (s *Server) create(ctx context.Context, leave context.CancelCauseFunc, conn *net.UnixConn, c *core.Client, peer Peer, cr Create) (*core.Partition, error) {
	req := cr.request()
	if !cr.Wait {
		return c.Create(req)
	}
	watchWaiter(conn, leave)
	return c.BookOrWait(ctx, req, &admission.WaitOptions{Timeout: cr.Timeout, PID: peer.PID}, tell(conn, ReplyJoined), tell(conn, ReplyPlace))
}

// watchWaiter ends a waiter's wait when its connection closes: a waiter
// sends nothing more, so anything read, or the end, is it leaving.
func watchWaiter(conn *net.UnixConn, leave context.CancelCauseFunc) {
	go func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		leave(errWaiterGone)
	}()
}

// tell sends a waiter news of its entry in line, as replies of kind.
func tell(conn *net.UnixConn, kind ReplyKind) func(admission.QueueEntry) {
	return func(e admission.QueueEntry) { _ = WriteFrame(conn, Reply{V: Version, Kind: kind, Entry: &e}) }
}

// handOver makes process pid the waiter of request id: the app hands its
// requests to background waiters of its own so. The process must be the
// caller's (root's may be anyone's), by the kernel's word.
func handOver(c *core.Client, peer Peer, id uint64, pid int) (domain.Request, error) {
	st, err := os.Stat("/proc/" + strconv.Itoa(pid))
	if err != nil || pid <= 0 {
		return domain.Request{}, domain.InputErr("no process %d to hand request %d to", pid, id)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); peer.UID != 0 && (!ok || int(sys.Uid) != peer.UID) {
		return domain.Request{}, fmt.Errorf("%w: process %d is not yours", domain.ErrNotOwner, pid)
	}
	return c.TakeOver(id, pid)
}

// waitFor makes the caller the waiter of its request id, in its place,
// and waits for it as create does: a waiter whose keeper restarted comes
// back so, and the app hands a request to a waiter of its own so. The
// request must be the caller's (or the caller root); it is the caller's
// process, from the kernel, that the line watches from then on. A request
// granted while no keeper ran gives its booking.
func (s *Server) waitFor(ctx context.Context, leave context.CancelCauseFunc, conn *net.UnixConn, c *core.Client, peer Peer, id uint64) (*core.Partition, error) {
	r, err := c.LineRequest(id)
	if err != nil {
		return nil, err
	}
	if !c.Me().MayChange(r.UID) {
		return nil, fmt.Errorf("%w: request %d belongs to %s; only they or root may wait for it", domain.ErrNotOwner, id, r.User)
	}
	if r.State == domain.Waiting {
		if r, err = c.TakeOver(id, peer.PID); err != nil {
			return nil, err
		}
		tell(conn, ReplyJoined)(admission.QueueEntry{Request: r})
	}
	watchWaiter(conn, leave)
	return c.Wait(ctx, id, tell(conn, ReplyPlace))
}
