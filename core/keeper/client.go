package keeper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"syscall"
	"time"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/proc"
)

// ErrDown says no keeper answers: a member's write cannot be made, and
// reads still work.
var ErrDown = errors.New("the keeper is not running: ask root to start chronos-monitor")

// ErrGone says the keeper went away before it answered.
var ErrGone = errors.New("the keeper stopped before it answered: ask root to check chronos-monitor")

// Client sends a member's writes to the keeper at Path; Local is the
// member's own client of the same ledger, which reads it and gives the
// bookings the keeper answers their calls.
type Client struct {
	Path  string
	Local *core.Client
}

// NewClient is a keeper client of the socket at path for local's ledger.
func NewClient(path string, local *core.Client) *Client { return &Client{Path: path, Local: local} }

// dial connects to the keeper.
func (k *Client) dial() (*net.UnixConn, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: k.Path, Net: "unix"})
	switch {
	case err == nil:
		return conn, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ECONNREFUSED):
		return nil, ErrDown
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("%w: you may not reach the keeper at %s (is your login in the ledger's group? log in again after being added)", ErrRefused, k.Path)
	}
	return nil, fmt.Errorf("reach the keeper at %s: %w", k.Path, err)
}

// call sends req and reads replies until the final one, passing the others
// to news.
func (k *Client) call(conn *net.UnixConn, req Request, news func(Reply)) (Reply, error) {
	req.V = Version
	// A keeper that refuses the caller answers without reading: its
	// answer is still there to read.
	sendErr := WriteFrame(conn, req)
	for {
		var r Reply
		if err := ReadFrame(conn, &r); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
				return Reply{}, ErrGone
			}
			if sendErr != nil {
				return Reply{}, fmt.Errorf("%w (%w)", ErrGone, sendErr)
			}
			return Reply{}, fmt.Errorf("the keeper's answer: %w", err)
		}
		switch r.Kind {
		case ReplyDone:
			return r, nil
		case ReplyError:
			return r, r.err()
		}
		if news != nil {
			news(r)
		}
	}
}

// once makes one request and returns the final reply.
func (k *Client) once(req Request) (Reply, error) {
	conn, err := k.dial()
	if err != nil {
		return Reply{}, err
	}
	defer conn.Close()
	return k.call(conn, req, nil)
}

func (k *Client) partition(r Reply, err error) (core.Partition, error) {
	if err != nil || r.Partition == nil {
		return core.Partition{}, err
	}
	return k.Local.Wrap(*r.Partition), nil
}

// Release ends booking id, as core.Client.Release does.
func (k *Client) Release(id uint64) (core.Partition, error) {
	return k.partition(k.once(Request{Op: OpRelease, ID: id}))
}

// Extend gives booking id d more, as core.Client.Extend does.
func (k *Client) Extend(id uint64, d time.Duration) (core.Partition, error) {
	return k.partition(k.once(Request{Op: OpExtend, ID: id, Duration: d}))
}

// Hold keeps booking id from idle reclaim for d, as core.Client.Hold does.
func (k *Client) Hold(id uint64, d time.Duration, reason string) (domain.BookingUsage, error) {
	r, err := k.once(Request{Op: OpHold, ID: id, Duration: d, Reason: reason})
	if err != nil || r.Usage == nil {
		return domain.BookingUsage{}, err
	}
	return *r.Usage, nil
}

// Cancel takes request id out of the line, as core.Client.Cancel does.
func (k *Client) Cancel(id uint64) error {
	_, err := k.once(Request{Op: OpCancel, ID: id})
	return err
}

// DismissNotice marks the notices of booking id read up to audit event
// seq, as core.Client.DismissNotice.
func (k *Client) DismissNotice(id, seq uint64) error {
	_, err := k.once(Request{Op: OpDismiss, ID: id, Seq: seq})
	return err
}

// TakeOver makes process pid, this user's, the waiter of request id, as
// core.Client.TakeOver does (the app hands its requests on so).
func (k *Client) TakeOver(id uint64, pid int) (domain.Request, error) {
	r, err := k.once(Request{Op: OpHandOver, ID: id, PID: pid})
	if err != nil || r.Entry == nil {
		return domain.Request{}, err
	}
	return r.Entry.Request, nil
}

// createOf is the wire form of req.
func createOf(req core.Request) *Create {
	return &Create{Host: req.Host, Device: req.Device, Devices: req.Devices, Count: req.Count, Fraction: req.Memory.Fraction, Bytes: req.Memory.Bytes, Duration: req.Duration,
		Compute: req.Compute, For: req.For, Start: req.Start}
}

// Create books req now or ahead, as core.Client.Create does.
func (k *Client) Create(req core.Request) (*core.Partition, error) {
	return k.BookOrWait(context.Background(), req, nil, nil, nil)
}

// Enqueue books req, or puts it in the line with this process as its
// waiter and returns, as core.Client.Enqueue does (the app: its requests
// leave the line when it is gone, which root's keeper sees).
func (k *Client) Enqueue(req core.Request, o admission.WaitOptions) (*core.Partition, *admission.QueueEntry, error) {
	cr := createOf(req)
	cr.Timeout = o.Timeout
	r, err := k.once(Request{Op: OpEnqueue, Create: cr})
	if err != nil {
		return nil, nil, err
	}
	if r.Partition != nil {
		p, err := k.partitionPtr(r)
		return p, nil, err
	}
	return nil, r.Entry, nil
}

// BookOrWait books req as core.Client.BookOrWait does, through the keeper:
// with wait set, the connection stays open while the request waits in
// line, and the end of ctx closes it, which takes the request out. A
// keeper that goes away meanwhile (restarted) leaves the request in its
// place, and the waiter waits for it again through the next (see waitOn).
func (k *Client) BookOrWait(ctx context.Context, req core.Request, wait *admission.WaitOptions, joined, onChange func(admission.QueueEntry)) (*core.Partition, error) {
	cr := createOf(req)
	if wait != nil {
		cr.Wait, cr.Timeout = true, wait.Timeout
	}
	return k.waitOn(ctx, Request{Op: OpCreate, Create: cr}, joined, onChange)
}

// WaitFor makes this process the waiter of request id, already in line,
// which keeps its place, and waits for it, as core.Client.WaitFor does
// (create --wait --request: the app hands its requests on so).
// joined hears the request once this process is its waiter.
func (k *Client) WaitFor(ctx context.Context, id uint64, joined, onChange func(admission.QueueEntry)) (*core.Partition, error) {
	return k.waitOn(ctx, Request{Op: OpWait, ID: id}, joined, onChange)
}

// Redial is how often a waiter whose keeper went away tries to reach the
// next one.
const Redial = 250 * time.Millisecond

// waitOn sends req, a create or a wait, and follows the keeper's replies
// to the final one. Should the keeper go away while the request waits in
// line (root restarts chronos-monitor), the request keeps its place: the
// waiter waits for the next keeper and hands itself to it (OpWait).
func (k *Client) waitOn(ctx context.Context, req Request, joined, onChange func(admission.QueueEntry)) (*core.Partition, error) {
	id := req.ID
	news := func(r Reply) {
		if r.Entry == nil {
			return
		}
		id = r.Entry.ID
		switch {
		case r.Kind == ReplyJoined && joined != nil:
			joined(*r.Entry)
		case r.Kind == ReplyPlace && onChange != nil:
			onChange(*r.Entry)
		}
	}
	back := false // the keeper went away while the request waited
	for {
		conn, err := k.dial()
		if back && errors.Is(err, ErrDown) {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%w: request %d: %w; it leaves the line when root's keeper is back and finds this process gone", domain.ErrLeftLine, id, proc.WhyStopped(ctx))
			case <-clock.Kernel.After(Redial): // pacing, not a time of the books
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		stop := context.AfterFunc(ctx, func() { conn.CloseWrite() }) // the keeper takes the request out, and says so
		r, err := k.call(conn, req, news)
		stop()
		conn.Close()
		if errors.Is(err, ErrGone) && id != 0 && ctx.Err() == nil {
			back, req = true, Request{Op: OpWait, ID: id}
			continue
		}
		if ctx.Err() != nil && id != 0 && (err == nil || errors.Is(err, domain.ErrLeftLine) || errors.Is(err, ErrGone)) {
			// Stopped by a signal: say so as a waiter of the ledger does.
			if err == nil {
				return k.partitionPtr(r)
			}
			return nil, fmt.Errorf("%w: request %d: %w", domain.ErrLeftLine, id, proc.WhyStopped(ctx))
		}
		if err != nil {
			return nil, err
		}
		return k.partitionPtr(r)
	}
}

func (k *Client) partitionPtr(r Reply) (*core.Partition, error) {
	if r.Partition == nil {
		return nil, fmt.Errorf("%w: the keeper answered a create with no booking", ErrRefused)
	}
	p := k.Local.Wrap(*r.Partition)
	if r.Room != nil {
		p.Room = *r.Room
	}
	return &p, nil
}

// RecordWrapper records this process as the wrapper of booking id, whose
// command leads process group group: the keeper takes the process from
// the kernel and checks the group is its child's.
func (k *Client) RecordWrapper(id uint64, group int) error {
	_, err := k.once(Request{Op: OpWrapper, ID: id, Group: group})
	return err
}

// ClaimSignal claims sig for this process's command, process group group,
// of booking id, as core.Client.ClaimSignal does; the keeper reads the
// leader's start and words the ledger's record itself.
func (k *Client) ClaimSignal(id uint64, sig syscall.Signal, group int, _ uint64, _ string) (bool, error) {
	r, err := k.once(Request{Op: OpSignal, ID: id, Group: group, Signal: int(sig)})
	return r.Claimed, err
}
