package tui

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/stretchr/testify/require"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/gpu"
	"github.com/chronos-gpu/chronos/storage"
)

// t0 is when every test happens.
var t0 = time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)

// clock is a fake clock tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

var (
	alice = core.Identity{UID: 2001, User: "alice"}
	bob   = core.Identity{UID: 2002, User: "bob"}
	carol = core.Identity{UID: 2003, User: "carol"}
	root  = core.Identity{UID: 0, User: "root"}
)

// world is a real ledger in a temporary directory, the simulated GPUs and
// a fake clock, seen by alice.
type world struct {
	t      testing.TB
	clock  *clock
	sim    *gpu.Sim
	ledger *storage.Ledger
	client *core.Client
}

func newWorld(t testing.TB, gpus int) *world {
	w := &world{t: t, clock: &clock{t: t0}}
	w.sim = gpu.NewSim(gpu.SimOptions{Count: gpus, Now: w.clock.Now})
	w.ledger = storage.New(filepath.Join(t.TempDir(), "chronos.db"))
	w.client = w.as(alice)
	return w
}

func (w *world) as(id core.Identity) *core.Client {
	return core.NewClient(core.Options{
		Ledger: w.ledger,
		Devices: func() (string, []gpu.Device, error) {
			d, err := w.sim.Devices()
			return w.sim.Name(), d, err
		},
		Now: w.clock.Now,
		As:  &id,
	})
}

// book makes a booking that started ago and lasts for d in all.
func (w *world) book(who core.Identity, device int, memory string, ago, d time.Duration) core.Partition {
	w.t.Helper()
	mem, err := core.ParseMemory(memory)
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

func (w *world) options() Options {
	return Options{
		Client:  w.client,
		Backend: w.sim,
		Mode:    "time-sliced",
		Host:    "gpu-box",
		Now:     w.clock.Now,
		Notice:  "no NVIDIA driver found; showing simulated GPUs",
	}
}

// model returns the app sized and with its first readings in.
func (w *world) model(width, height int) Model {
	w.t.Helper()
	m := New(w.options())
	m = update(w.t, m, tea.WindowSizeMsg{Width: width, Height: height})
	m = run(w.t, m, sampleCmd(w.sim))
	m = run(w.t, m, loadCmd(w.client))
	return m
}

func update(t testing.TB, m Model, msg tea.Msg) Model {
	t.Helper()
	next, _ := m.Update(msg)
	return next.(Model)
}

// namedKeys are the keys press knows by name; anything else is typed text.
var namedKeys = map[string]tea.KeyType{
	"enter": tea.KeyEnter, "esc": tea.KeyEsc, "tab": tea.KeyTab, "shift+tab": tea.KeyShiftTab,
	"up": tea.KeyUp, "down": tea.KeyDown, "left": tea.KeyLeft, "right": tea.KeyRight,
	"backspace": tea.KeyBackspace, "ctrl+u": tea.KeyCtrlU, "ctrl+c": tea.KeyCtrlC,
}

// press sends keys, one after another, and runs what they ask.
func press(t testing.TB, m Model, keys ...string) Model {
	t.Helper()
	for _, k := range keys {
		msg := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		if typ, ok := namedKeys[k]; ok {
			msg = tea.KeyMsg{Type: typ}
		}
		next, cmd := m.Update(msg)
		m = run(t, next.(Model), cmd)
	}
	return m
}

// run executes cmd and feeds its messages back, as the program would. Commands
// that wait (ticks, the status timer, watches) are given a moment and then
// left behind, so tests see only what a key does at once.
func run(t testing.TB, m Model, cmd tea.Cmd) Model {
	t.Helper()
	for _, msg := range collect(cmd) {
		if _, quit := msg.(tea.QuitMsg); quit {
			continue
		}
		next, more := m.Update(msg)
		m = run(t, next.(Model), more)
	}
	return m
}

func collect(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-done:
	case <-time.After(100 * time.Millisecond):
		return nil
	}
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
