package tui

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
	"github.com/chronos-gpu/chronos/storage/bolt"
)

// t0 is when every test happens.
var t0 = time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)

var (
	alice = domain.Identity{UID: 2001, User: "alice"}
	bob   = domain.Identity{UID: 2002, User: "bob"}
	carol = domain.Identity{UID: 2003, User: "carol"}
	root  = domain.Identity{UID: 0, User: "root"}
)

// world is a real ledger in a temporary directory, the simulated GPUs and
// a fake clock, seen by alice. Its backend and ledger count their reads.
type world struct {
	t      testing.TB
	clock  *clock.Fake
	sim    *gpu.Sim
	gpus   *countingBackend
	ledger *countingStore
	client *core.Client
}

// countingBackend is the simulated GPUs, counting how often they are read.
type countingBackend struct {
	*gpu.Sim
	samples atomic.Int64
}

func (b *countingBackend) Sample() (gpu.Sample, error) {
	b.samples.Add(1)
	return b.Sim.Sample()
}

// countingStore is a real ledger, counting its read transactions.
type countingStore struct {
	storage.Store
	views atomic.Int64
}

func (s *countingStore) View(ctx context.Context, fn func(*storage.Tx) error) error {
	s.views.Add(1)
	return s.Store.View(ctx, fn)
}

// Private is the ledger's own answer: core keeps simulated GPUs' inventory
// only in a ledger private to its user.
func (s *countingStore) Private() bool {
	p, ok := s.Store.(interface{ Private() bool })
	return ok && p.Private()
}

func newWorld(t testing.TB, gpus int) *world {
	w := &world{t: t, clock: clock.NewFake(t0)}
	w.sim = gpu.NewSim(gpu.SimOptions{Count: gpus, Now: w.clock.Now})
	w.gpus = &countingBackend{Sim: w.sim}
	w.ledger = &countingStore{Store: bolt.New(filepath.Join(t.TempDir(), "chronos.db"))}
	w.client = w.as(alice)
	return w
}

func (w *world) as(id domain.Identity) *core.Client {
	return core.NewClient(core.Options{
		Ledger: w.ledger,
		Devices: func() (core.Listing, error) {
			d, err := w.sim.Devices()
			return core.Listing{Backend: w.sim.Name(), Devices: d}, err
		},
		Clock: w.clock,
		As:    &id,
	})
}

// book makes a booking that started ago and lasts for d in all.
func (w *world) book(who domain.Identity, device int, memory string, ago, d time.Duration) core.Partition {
	w.t.Helper()
	mem, err := human.ParseMemory(memory)
	require.NoError(w.t, err)
	w.clock.Set(t0.Add(-ago))
	defer w.clock.Set(t0)
	p, err := w.as(who).Create(core.Request{Device: device, Memory: mem, Duration: d})
	require.NoError(w.t, err)
	return *p
}

// seed makes a few bookings: alice's two (one ending soon), bob's and
// carol's, and one bob released.
func (w *world) seed() {
	w.book(alice, 0, "50%", 30*time.Minute, 2*time.Hour)
	w.book(bob, 1, "30%", time.Hour, 4*time.Hour)
	w.book(carol, 1, "20%", 10*time.Minute, time.Hour)
	w.book(alice, 3, "25%", 57*time.Minute, time.Hour)
	p := w.book(bob, 2, "40%", 5*time.Minute, time.Hour)
	_, err := w.as(bob).Release(p.ID)
	require.NoError(w.t, err)
}

// options are the app's, with timed messages handed to the test (see run)
// instead of waited for.
func (w *world) options() Options {
	return Options{
		Client:  w.client,
		Backend: w.gpus,
		Mode:    "time-sliced",
		Host:    "gpu-box",
		Clock:   w.clock,
		Notice:  "no NVIDIA driver found; showing simulated GPUs",
		after: func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
			return func() tea.Msg { return timerMsg{after: d, msg: fn(t0.Add(d))} }
		},
	}
}

// timerMsg is a timed message the app asked for; run does not deliver it.
type timerMsg struct {
	after time.Duration
	msg   tea.Msg
}

// model returns the app sized and with its first readings in.
func (w *world) model(width, height int) *Model {
	w.t.Helper()
	m := New(w.options())
	update(w.t, m, tea.WindowSizeMsg{Width: width, Height: height})
	run(w.t, m, sampleCmd(w.gpus))
	run(w.t, m, loadCmd(w.client, false, 0))
	return m
}

// update gives the app one message and runs what it asks.
func update(t testing.TB, m *Model, msg tea.Msg) *Model {
	t.Helper()
	_, cmd := m.Update(msg)
	return run(t, m, cmd)
}

// namedKeys are the keys press knows by name; anything else is typed text.
var namedKeys = map[string]tea.KeyType{
	"enter": tea.KeyEnter, "esc": tea.KeyEsc, "tab": tea.KeyTab, "shift+tab": tea.KeyShiftTab,
	"up": tea.KeyUp, "down": tea.KeyDown, "left": tea.KeyLeft, "right": tea.KeyRight,
	"backspace": tea.KeyBackspace, "ctrl+u": tea.KeyCtrlU, "ctrl+c": tea.KeyCtrlC,
}

// press sends keys, one after another, and runs what they ask.
func press(t testing.TB, m *Model, keys ...string) *Model {
	t.Helper()
	for _, k := range keys {
		update(t, m, keyMsg(k))
	}
	return m
}

// run executes cmd to its end and feeds its messages back, as the program
// would. Every read runs to its end, however slow. Timed messages (ticks,
// the status line's clearing) are not delivered: a test sends those itself
// when it means time to pass. Nor is a quit.
func run(t testing.TB, m *Model, cmd tea.Cmd) *Model {
	t.Helper()
	for _, msg := range collect(cmd) {
		switch msg.(type) {
		case tea.QuitMsg, timerMsg:
			continue
		}
		_, more := m.Update(msg)
		run(t, m, more)
	}
	return m
}

// collect runs cmd, and each command of a batch, to its end.
func collect(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if batch, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range batch {
			out = append(out, collect(c)...)
		}
		return out
	}
	if msg == nil {
		return nil
	}
	return []tea.Msg{msg}
}

// keyMsg is one key as the terminal sends it: by name, or typed text.
func keyMsg(k string) tea.KeyMsg {
	if typ, ok := namedKeys[k]; ok {
		return tea.KeyMsg{Type: typ}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}
