// Package tui is Chronos's terminal app — every GPU's live load, every
// booking with its countdown, the GPU processes and whom they count against,
// and keys to book, release and extend — and the plain renderers the CLI
// prints with.
//
// The app is a root Model that composes components, each a package of its
// own: the GPU panel (tui/gpus), one tab per table (tui/tabs: bookings,
// processes and the line, on the table in tui/widget), the booking form
// (tui/form), the prompt on the status line (tui/widget) and a GPU's
// history, which takes the screen (tui/history); what they all draw with
// (styles, cells, bars, the table) is in tui/widget. The person's notices
// stay on a line under the header until dismissed. Every component draws
// from what the root hands it, keeps its own keys (a help.KeyMap) and is
// sized by the root. All reading and writing happens in tea.Cmds
// (cmds.go).
//
// To add a tab: write a type that meets
// the tab interface in tabs.go — usually a table of its own rows, shaped by
// a pure function from the readings — and append it to the tabs in New. The
// root then switches to it with tab, sizes it, hands it every new reading
// and routes its keys; nothing else changes.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"
	"golang.org/x/sys/unix"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/policy"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/tui/form"
	"github.com/chronos-gpu/chronos/tui/gpus"
	"github.com/chronos-gpu/chronos/tui/history"
	"github.com/chronos-gpu/chronos/tui/tabs"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// Writer is what makes the app's writes: a core.Client, or the keeper's
// client on a guarded ledger.
type Writer interface {
	Create(req core.Request) (*core.Partition, error)
	Enqueue(req core.Request, o admission.WaitOptions) (*core.Partition, *admission.QueueEntry, error)
	Release(id uint64) (core.Partition, error)
	Extend(id uint64, d time.Duration) (core.Partition, error)
	Cancel(id uint64) error
	TakeOver(id uint64, pid int) (domain.Request, error)
	DismissNotice(id, seq uint64) error
}

// writes is what makes the app's writes (see Options.Writes).
func (m *Model) writes() Writer {
	if m.opts.Writes != nil {
		return m.opts.Writes
	}
	return m.opts.Client
}

// Options configure the app.
type Options struct {
	// Context is the command's: when it ends, so do the app's watches of
	// the ledger. Nil means context.Background().
	Context context.Context
	Client  *core.Client
	// Writes makes the app's bookings, releases, extensions,
	// cancellations and dismissals of notices: a member's of a guarded
	// ledger go through root's keeper. Nil means Client.
	Writes  Writer
	Backend gpu.Backend
	// Notice is shown under the header, e.g. "no NVIDIA driver found;
	// showing simulated GPUs".
	Notice string
	// Mode is how the GPUs are shared: "concurrent (MPS, multi-user)" or
	// "time-sliced".
	Mode string
	Host string
	// Acts carries one line per monitor act (expired, warned, signalled),
	// shown in the status line. May be nil.
	Acts <-chan string
	// Self is the chronos program, and SelfArgs its global flags (the
	// ledger's): quitting with requests in line may leave them to a
	// `chronos create --wait --request` of each, started from it. Empty
	// Self means this program.
	Self     string
	SelfArgs []string
	// Out hears, once the app has closed, what the person should know then
	// (the background waiters' pids and logs); nil means standard output.
	Out io.Writer
	// Clock tells the time and times every tick; nil means the client's.
	Clock clock.Clock
	// Refresh is how often the screen ticks; zero means a second. The GPUs
	// are sampled every gpuEvery ticks; the ledger is re-read when it
	// changes (see reloadEvery).
	Refresh time.Duration

	// after makes every timed message (ticks, status clearing); nil means
	// tickOn(Clock). Tests collect them instead of waiting.
	after func(time.Duration, func(time.Time) tea.Msg) tea.Cmd
}

// The smallest terminal the app draws in.
const (
	minWidth  = 60
	minHeight = 16
)

// Work a tick does only now and then, not every second. The GPU panel is
// the widest part of the screen and changes with every reading, so reading
// every other tick halves what it writes to the terminal. The ledger is
// re-read on the watch's change notices, after the app's own writes and when
// a booking's deadline passes; reloadEvery re-reads it anyway in case a
// notice was missed.
const (
	gpuEvery    = 2
	reloadEvery = 10
)

// frameRate is how often the renderer wakes to draw what changed. Each
// wake-up of an otherwise idle process costs CPU (on the VM, 20 frames a
// second used a tenth of a percent of a core more than 10); at 10 a key
// shows within a tenth of a second, and the first frame comes up to that
// much later.
const frameRate = 10

// mode is what the keyboard is talking to.
type mode int

const (
	browsing       mode = iota
	booking             // the new-booking form
	releasing           // the prompt waits for y to confirm a release
	extending           // the prompt takes an extension
	filtering           // the prompt takes a filter, applied as it is typed
	cancelling          // the prompt waits for y to take a request out of the line
	viewingHistory      // one GPU's history fills the screen
	quitting            // the prompt asks before quitting leaves the line
)

// prompting is whether the prompt on the status line has the keyboard: it
// takes the keys and is drawn in place of the status.
func (md mode) prompting() bool {
	return md == releasing || md == extending || md == filtering || md == cancelling || md == quitting
}

// Model is the root of the app: it owns the readings, schedules reading
// them again, routes keys by mode to the component that has the keyboard,
// and lays the components out. It is used by pointer: every copy is the
// same app.
type Model struct {
	opts Options
	sh   *widget.Shared
	keys appKeys
	ctx  context.Context
	stop context.CancelFunc

	width, height int

	data    tabs.Readings
	sched   schedule
	changes <-chan struct{}

	gpus      *gpus.Panel
	bookings  *tabs.Bookings
	processes *tabs.Processes
	queue     *tabs.Queue
	tabs      []tab
	active    int
	form      *form.Booking
	prompt    *widget.Prompt
	history   *history.View // while viewingHistory
	help      help.Model

	mode     mode
	filter   string // as typed; rows match it ignoring case
	mineOnly bool
	sortBy   []tabs.Order // each tab's own, by index: s re-sorts only the tab on screen
	fullHelp bool
	target   tabs.BookingRow // what x or e acts on
	request  tabs.QueueRow   // the request x cancels in the Queue tab
	resume   mode            // what the keyboard goes back to when the person stays

	// notices are the person's notices neither dismissed nor moot, at most
	// one per booking, the newest last: it is the one shown. They are read
	// from the audit trail, up to event noticesRead so far, so every app of
	// the person's shows the same ones.
	notices     []notice.Notice
	noticesRead uint64
	// placed are the requests this app put in the waiting line and waits
	// for, until it sees them booked (noticeGrants) or takes them out.
	placed map[uint64]bool
	// farewell is said on the terminal once the app has closed.
	farewell string
	status   statusLine
	memos    struct{ header, tabs, footer widget.Memo }
}

// tickOn is tea.Tick on c: the message fn makes from the time d from now.
func tickOn(c clock.Clock) func(time.Duration, func(time.Time) tea.Msg) tea.Cmd {
	return func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		return func() tea.Msg { return fn(<-c.After(d)) }
	}
}

// New returns the app's root model.
func New(opts Options) *Model {
	if opts.Refresh <= 0 {
		opts.Refresh = time.Second
	}
	if opts.Clock == nil {
		opts.Clock = opts.Client.Clock()
	}
	if opts.after == nil {
		opts.after = tickOn(opts.Clock)
	}
	sh := &widget.Shared{Styles: widget.DefaultStyles(), Now: opts.Clock.Now, Me: opts.Client.Me(), Host: opts.Client.Host(), After: opts.after}
	if opts.Context == nil {
		opts.Context = context.Background()
	}
	ctx, stop := context.WithCancel(opts.Context)
	m := &Model{
		opts: opts, sh: sh, keys: defaultAppKeys(), ctx: ctx, stop: stop,
		width: 80, height: 24,
		data:      tabs.Readings{Policy: policy.Default()},
		gpus:      gpus.New(sh, int(history.Window/(gpuEvery*opts.Refresh))+1),
		bookings:  tabs.NewBookings(sh),
		processes: tabs.NewProcesses(sh),
		queue:     tabs.NewQueue(sh),
		prompt:    widget.NewPrompt(sh),
		help:      help.New(),
	}
	m.tabs = []tab{m.bookings, m.processes, m.queue}
	m.sortBy = make([]tabs.Order, len(m.tabs))
	for i, t := range m.tabs {
		if keys := t.SortKeys(); len(keys) > 0 {
			m.sortBy[i] = tabs.OrderBy(keys[0])
		}
	}
	m.help.Styles.FullKey = sh.Styles.Label
	m.help.Styles.FullDesc = sh.Styles.Faint
	m.Update(tea.WindowSizeMsg{Width: m.width, Height: m.height})
	return m
}

// gcPercent is the app's garbage collection target, unless GOGC says
// otherwise. The app's live heap is a few MiB and it allocates little once
// drawn, so collecting at half the default growth costs no CPU that can be
// measured and keeps about 2 MiB less resident.
const gcPercent = 50

// Run shows the app on the terminal until the person quits.
func Run(opts Options) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if opts.Context == nil {
		opts.Context = context.Background()
	}
	ctx, lost := context.WithCancel(opts.Context)
	defer lost()
	opts.Context = ctx
	var hungUp atomic.Bool
	go watchTerminal(ctx, int(os.Stdin.Fd()), func() { hungUp.Store(true); lost() })
	m := New(opts)
	defer m.stop()
	_, err := tea.NewProgram(m, tea.WithAltScreen(), tea.WithFPS(frameRate), tea.WithContext(ctx)).Run()
	if hungUp.Load() || errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // the terminal went away, or the command was told to stop
	}
	if m.farewell != "" {
		out := opts.Out
		if out == nil {
			out = os.Stdout
		}
		fmt.Fprintln(out, m.farewell)
	}
	return err
}

// Init reads the GPUs and the ledger, starts the refresh tick and the
// ledger watch, and listens for the monitor.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(
		sampleCmd(m.opts.Backend),
		loadCmd(m.opts.Client, false, 0),
		m.tickCmd(),
		watchCmd(m.ctx, m.opts.Client.Ledger(), m.opts.Refresh),
		waitActCmd(m.opts.Acts),
	)
}

// Update routes one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	m.syncKeys()
	m.relayout()
	return m, cmd
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.Width = msg.Width
		return nil
	case tea.KeyMsg:
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
			// Keys typed faster than a read arrive together ("n30%"); each
			// is its own key, and the first may change what the rest mean.
			var cmds []tea.Cmd
			for _, r := range msg.Runes {
				cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
			}
			return tea.Batch(cmds...)
		}
		return m.key(msg)
	case clearStatusMsg:
		m.status.clear(msg.seq)
		return nil
	}
	return m.receive(msg)
}

// quit stops the app: the ledger watch ends and the program exits.
func (m *Model) quit() tea.Cmd {
	m.stop()
	return tea.Quit
}

// derive rebuilds what the components show from the readings and the
// person's filters. It runs when either changes, not on every frame, so
// View only draws.
func (m *Model) derive() {
	now := m.sh.Now()
	// This host's GPUs are sampled here; other hosts' bookings are drawn
	// under their own GPUs.
	client := m.opts.Client
	here := slices.DeleteFunc(slices.Clone(m.data.Parts), func(p core.Partition) bool { return !client.OnThisHost(p.Partition) })
	m.data.Attrs = admission.Attribute(m.data.Sample, rawPartitions(here), now)
	m.gpus.SetBookings(gpus.BookedSegments(here, m.data.Attrs, true, now), gpus.NextBookings(here, now))
	m.gpus.SetHosts(m.data.Hosts, gpus.HostSegments(m.data.Parts, client, now))
	for i, t := range m.tabs {
		t.SetRows(&m.data, tabs.Filter{Text: m.filter, MineOnly: m.mineOnly, SortBy: m.sortBy[i]}, now)
	}
	m.sched.nextChange = nextChange(m.data.Parts, m.sched.loadedAt)
	m.dropMootNotices(now)
	if m.form != nil {
		m.form.SetAvailable(m.data.Avail)
	}
}

// relayout pushes the sizes the layout gives down to the components: the
// terminal's size, the number of GPUs and the form decide them.
func (m *Model) relayout() {
	l := m.layout()
	for _, t := range m.tabs {
		t.SetSize(m.width, l.body)
	}
	if m.history != nil {
		m.history.SetSize(m.width, l.history)
	}
}

// tooSmall is a terminal the app does not draw in; only quitting works there.
func (m *Model) tooSmall() bool { return m.width < minWidth || m.height < minHeight }

// current is the tab on screen.
func (m *Model) current() tab { return m.tabs[m.active] }

// show puts t on screen.
func (m *Model) show(t tab) {
	if i := slices.Index(m.tabs, t); i >= 0 {
		m.active = i
	}
}

// watchTerminal calls lost once the terminal on fd hangs up (the SSH
// session or the tmux pane went away) and the app has not been told by a
// SIGHUP (it was started with the signal ignored, under nohup or some
// runuser set-ups): reads then end as at end of file, and the app would
// run on unseen, holding its requests' places in line. A hung-up terminal
// answers every ioctl with EIO.
func watchTerminal(ctx context.Context, fd int, lost func()) {
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return // not a terminal: nothing to watch
	}
	t := clock.Kernel.NewTicker(time.Second) // polling the terminal, in real time
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
				lost()
				return
			}
		}
	}
}
