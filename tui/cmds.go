package tui

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/report"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/tui/history"
)

// Every read and write of the ledger or the GPUs happens in one of these
// commands, off the update loop. Each captures the values it needs, never the
// model, and reports back with a message, errors included. Timed messages
// (ticks, the status line's clearing) go through widget.Shared.After.

// sampleMsg is one reading of the GPUs.
type sampleMsg struct {
	sample gpu.Sample
	err    error
}

// ledgerMsg is one reading of the ledger.
type ledgerMsg struct {
	parts  []core.Partition
	avail  []core.Availability
	policy domain.Policy
	// queue is the waiting line, read only while the Queue tab is shown
	// (withQueue): laying a long line out is the dearest read there is.
	queue     []admission.QueueEntry
	withQueue bool
	// notices are the person's notices recorded after the app's last
	// reading of them (all still of interest at the first), and
	// noticesUpTo the newest event then.
	notices     []notice.Notice
	noticesUpTo uint64
	// took is how long the read took, in real time: it spaces the reads
	// change notices ask for (see changeSpacingAfter).
	took time.Duration
	err  error
}

// tickMsg re-arms the one refresh loop.
type tickMsg time.Time

// ledgerChangedMsg says another process wrote the ledger.
type ledgerChangedMsg struct{}

// changeSpacing is the least time between two reads caused by change
// notices: a change still shows within a quarter of a second.
const changeSpacing = 250 * time.Millisecond

// Under a stream of change notices the app spends at most a readShare-th
// of its time reading: a read that took long (a ledger of many recent
// bookings, a loaded etcd) waits readShare times as long before the next,
// up to changeSpacingMax, so that an open app never takes the ledger from
// the people writing it.
const (
	readShare        = 10
	changeSpacingMax = 5 * time.Second
)

// changeSpacingAfter is the time to leave after a read that took took
// before the next one a change notice asks for.
func changeSpacingAfter(took time.Duration) time.Duration {
	return min(max(changeSpacing, readShare*took), changeSpacingMax)
}

// changeSpacingMsg ends a changeSpacing.
type changeSpacingMsg struct{}

// watchingMsg hands over the channel the ledger sends change notices on.
type watchingMsg struct{ changes <-chan struct{} }

// actMsg is one line from the monitor: something it expired, warned or signalled.
type actMsg string

// dismissedMsg answers d on a notice: it is recorded in the ledger, so
// that every app of the person's drops it.
type dismissedMsg struct{ err error }

// createdMsg, releasedMsg and extendedMsg answer the key that asked.
type createdMsg struct {
	part *core.Partition
	err  error
}

// queuedMsg answers the form's "wait in line": the request's place in
// line, or the booking when it fitted after all.
type queuedMsg struct {
	entry *admission.QueueEntry
	part  *core.Partition
	err   error
}

// leftLineMsg answers the cancelling of a waiting request.
type leftLineMsg struct {
	id  uint64
	err error
}

type releasedMsg struct {
	part core.Partition
	err  error
}

type extendedMsg struct {
	part core.Partition
	by   time.Duration
	err  error
}

// backgroundMsg answers "keep waiting in the background": the waiters
// started, or why not.
type backgroundMsg struct {
	waiters []backgroundWaiter
	err     error
}

// backgroundWaiter is a `chronos create --wait --request` left waiting
// for one of the app's requests.
type backgroundWaiter struct {
	request uint64
	pid     int
	log     string
}

// clearStatusMsg clears the status line if nothing newer replaced it.
type clearStatusMsg struct{ seq int }

func sampleCmd(b gpu.Backend) tea.Cmd {
	if b == nil {
		return nil
	}
	return func() tea.Msg {
		s, err := b.Sample()
		return sampleMsg{sample: s, err: err}
	}
}

// loadCmd reads the ledger: the bookings, what is free, the policy, the
// line when asked, and the person's notices recorded after event
// noticesAfter.
func loadCmd(c *core.Client, withQueue bool, noticesAfter uint64) tea.Cmd {
	return func() tea.Msg {
		start := clock.Kernel.Now() // the read's cost, not a time of the books
		msg := read(c, withQueue, noticesAfter)
		msg.took = clock.Kernel.Now().Sub(start)
		return msg
	}
}

func read(c *core.Client, withQueue bool, noticesAfter uint64) ledgerMsg {
	msg := ledgerMsg{withQueue: withQueue}
	if msg.parts, msg.err = c.Recent(0); msg.err != nil {
		return msg
	}
	if msg.notices, msg.noticesUpTo, msg.err = c.Notices(noticesAfter); msg.err != nil {
		return msg
	}
	if msg.avail, msg.err = c.Available(-1); msg.err != nil {
		return msg
	}
	if withQueue {
		if msg.queue, msg.err = c.Queue(); msg.err != nil {
			return msg
		}
	}
	msg.policy, msg.err = c.Policy()
	return msg
}

// hostsMsg is one reading of the other hosts of a shared ledger.
type hostsMsg struct {
	hosts []core.HostView
	err   error
}

// hostsCmd reads what the other hosts' monitors publish; nil on a ledger
// file, which has no other hosts.
func hostsCmd(c *core.Client) tea.Cmd {
	if c.Host() == "" {
		return nil
	}
	return func() tea.Msg {
		hosts, err := c.Hosts()
		return hostsMsg{hosts: hosts, err: err}
	}
}

// watchCmd starts watching the ledger; ctx ends the watch.
func watchCmd(ctx context.Context, ledger storage.Store, poll time.Duration) tea.Cmd {
	return func() tea.Msg {
		return watchingMsg{changes: ledger.Changes(ctx, poll)}
	}
}

// waitCmd waits for the next value on ch and hands it over as msg makes
// it; the model re-arms it. A closed channel (its source ended) ends the
// wait.
func waitCmd[T any](ch <-chan T, msg func(T) tea.Msg) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		v, ok := <-ch
		if !ok {
			return nil
		}
		return msg(v)
	}
}

// waitChangeCmd waits for the ledger's next change notice.
func waitChangeCmd(ch <-chan struct{}) tea.Cmd {
	return waitCmd(ch, func(struct{}) tea.Msg { return ledgerChangedMsg{} })
}

// waitActCmd waits for the monitor's next act.
func waitActCmd(acts <-chan string) tea.Cmd {
	return waitCmd(acts, func(a string) tea.Msg { return actMsg(a) })
}

func historyCmd(c *core.Client, device int) tea.Cmd {
	return func() tea.Msg {
		h, err := report.History(c, device, history.Window)
		return history.Msg{Device: device, History: h, Err: err}
	}
}

func createCmd(c Writer, req core.Request) tea.Cmd {
	return func() tea.Msg {
		p, err := c.Create(req)
		return createdMsg{part: p, err: err}
	}
}

// enqueueCmd joins the waiting line with this process, the app, as the
// request's waiter: the engine takes a request out of the line when its
// waiter is gone, so quitting the app takes it out, as stopping `create
// --wait` does. While the app runs, its monitor and whoever frees room
// place it.
func enqueueCmd(c Writer, req core.Request) tea.Cmd {
	return func() tea.Msg {
		p, e, err := c.Enqueue(req, admission.WaitOptions{})
		return queuedMsg{entry: e, part: p, err: err}
	}
}

// leaveLineCmd takes the app's requests out of the line, then quits: the
// audit trail says their owner left, not that a waiting process vanished.
// One it cannot cancel (the ledger busy) leaves with the app's process all
// the same.
func leaveLineCmd(c Writer, ids []uint64) tea.Cmd {
	return func() tea.Msg {
		for _, id := range ids {
			_ = c.Cancel(id)
		}
		return tea.QuitMsg{}
	}
}

func cancelRequestCmd(c Writer, id uint64) tea.Cmd {
	return func() tea.Msg {
		return leftLineMsg{id: id, err: c.Cancel(id)}
	}
}

func dismissCmd(c Writer, n notice.Notice) tea.Cmd {
	return func() tea.Msg {
		return dismissedMsg{err: c.DismissNotice(n.Partition, n.Seq)}
	}
}

// backgroundCmd hands each of the requests to a `chronos create --wait
// --request` of its own, started from self, detached (its own session:
// the terminal closing does not end it), its output to a log under the
// user's state directory. It makes each the request's waiter before it
// answers, so the request never waits for nobody once the app is gone.
func backgroundCmd(c *core.Client, wr Writer, self string, global []string, ids []uint64, now time.Time) tea.Cmd {
	return func() tea.Msg {
		var msg backgroundMsg
		if self == "" {
			if self, msg.err = os.Executable(); msg.err != nil {
				return msg
			}
		}
		for _, id := range ids {
			w, err := startWaiter(c, wr, self, global, id, now)
			if err != nil {
				msg.err = fmt.Errorf("request #%d: %w", id, err)
				return msg
			}
			msg.waiters = append(msg.waiters, w)
		}
		return msg
	}
}

func startWaiter(c *core.Client, wr Writer, self string, global []string, id uint64, now time.Time) (backgroundWaiter, error) {
	w := backgroundWaiter{request: id}
	r, err := c.LineRequest(id)
	if err != nil {
		return w, err
	}
	if w.log, err = core.BackgroundWaitLog(id, now); err != nil {
		return w, err
	}
	log, err := os.OpenFile(w.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return w, fmt.Errorf("open its log: %w", err)
	}
	defer func() { _ = log.Close() }() // the waiter has its own copy
	cmd := exec.Command(self, append(slices.Clone(global), waitArgs(r)...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return w, fmt.Errorf("start %s: %w", self, err)
	}
	w.pid = cmd.Process.Pid
	if _, err := wr.TakeOver(id, w.pid); err != nil {
		_ = cmd.Process.Kill() // it would only find the request gone
		_ = cmd.Wait()
		return w, err
	}
	return w, cmd.Process.Release()
}

// waitArgs are the arguments of `chronos create` that wait for r in its
// place.
func waitArgs(r domain.Request) []string {
	device := admission.AskedGPUs("", domain.Request{Host: r.Host, Device: r.Device, Devices: r.Devices}) // any×N is any --gpus N
	memory := human.FormatPercent(r.SharePPM)
	if r.Bytes > 0 {
		memory = strconv.FormatUint(r.Bytes>>10, 10) + "KiB"
	}
	args := []string{"create", device, memory, human.FormatDuration(r.Duration), "--wait", "--request", strconv.FormatUint(r.ID, 10)}
	if r.Count > 1 {
		args = append(args, "--gpus", strconv.Itoa(r.Count))
	}
	return args
}

func releaseCmd(c Writer, id uint64) tea.Cmd {
	return func() tea.Msg {
		p, err := c.Release(id)
		return releasedMsg{part: p, err: err}
	}
}

func extendCmd(c Writer, id uint64, d time.Duration) tea.Cmd {
	return func() tea.Msg {
		p, err := c.Extend(id, d)
		return extendedMsg{part: p, by: d, err: err}
	}
}
