package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/chronos-gpu/chronos/core"
)

// field is one line of the booking form.
type field int

const (
	fieldDevice field = iota
	fieldMemory
	fieldDuration
	fieldFor
)

// durationPresets are offered in the form; any other duration can be typed.
var durationPresets = []string{"30m", "1h", "2h", "4h", "8h"}

// bookingForm asks for a new booking. It checks what it can before asking
// the ledger (each mistake explained next to the form, which stays open);
// the ledger's own refusals come back the same way.
type bookingForm struct {
	c       *common
	devices []core.Availability
	device  int // index into devices
	focus   field
	fields  int // fieldFor+1 for root, who may book for others

	memory, duration, forUser textinput.Model

	err  string
	busy bool // sent, waiting for the ledger's answer
}

func newInput(c *common, placeholder, value string, width int) textinput.Model {
	ti := textinput.New()
	ti.Prompt = ""
	ti.Placeholder = placeholder
	ti.PlaceholderStyle = c.styles.Faint
	ti.Cursor.SetMode(cursor.CursorStatic)
	ti.Width = width
	ti.CharLimit = 32
	ti.SetValue(value)
	return ti
}

func newBookingForm(c *common, avail []core.Availability) bookingForm {
	f := bookingForm{
		c:        c,
		devices:  avail,
		memory:   newInput(c, "", "", 14),
		duration: newInput(c, "1h", "1h", 14),
		forUser:  newInput(c, "", "", 14),
		fields:   int(fieldDuration) + 1,
	}
	if c.me.Root() {
		f.fields = int(fieldFor) + 1
	}
	// Start on the GPU with the most room.
	for i, a := range avail {
		if a.FreePPM > avail[f.device].FreePPM {
			f.device = i
		}
	}
	f.focusOn(fieldMemory)
	return f
}

// setDevices takes a fresh availability reading, keeping the chosen GPU.
func (f *bookingForm) setDevices(avail []core.Availability) {
	idx := -1
	if f.device < len(f.devices) {
		idx = f.devices[f.device].Device.Index
	}
	f.devices, f.device = avail, 0
	for i, a := range avail {
		if a.Device.Index == idx {
			f.device = i
		}
	}
}

func (f *bookingForm) focusOn(fl field) {
	f.focus = fl
	for i, ti := range []*textinput.Model{&f.memory, &f.duration, &f.forUser} {
		if field(i+1) == fl {
			ti.Focus()
		} else {
			ti.Blur()
		}
	}
}

func (f *bookingForm) input() *textinput.Model {
	switch f.focus {
	case fieldMemory:
		return &f.memory
	case fieldDuration:
		return &f.duration
	case fieldFor:
		return &f.forUser
	}
	return nil
}

// Update handles a key. It returns a request when the form was submitted and
// its input is valid.
func (f bookingForm) Update(msg tea.KeyMsg) (bookingForm, *core.Request) {
	k := f.c.keys
	switch {
	case key.Matches(msg, k.Submit):
		req, fl, err := f.request()
		if err != nil {
			f.err = err.Error()
			f.focusOn(fl)
			return f, nil
		}
		f.err, f.busy = "", true
		return f, &req
	case key.Matches(msg, k.NextField):
		f.focusOn(field((int(f.focus) + 1) % f.fields))
		return f, nil
	case key.Matches(msg, k.PrevField):
		f.focusOn(field((int(f.focus) + f.fields - 1) % f.fields))
		return f, nil
	}
	switch f.focus {
	case fieldDevice:
		switch s := msg.String(); {
		case key.Matches(msg, k.Left) || s == "h":
			f.device = max(0, f.device-1)
		case key.Matches(msg, k.Right) || s == "l":
			f.device = min(len(f.devices)-1, f.device+1)
		case len(s) == 1 && s[0] >= '0' && s[0] <= '9':
			for i, a := range f.devices {
				if a.Device.Index == int(s[0]-'0') {
					f.device = i
				}
			}
		}
		return f, nil
	case fieldDuration:
		if key.Matches(msg, k.Left, k.Right) {
			f.duration.SetValue(f.nextPreset(key.Matches(msg, k.Right)))
			f.duration.CursorEnd()
			return f, nil
		}
	}
	if in := f.input(); in != nil {
		*in, _ = in.Update(msg)
		f.err = ""
	}
	return f, nil
}

// nextPreset steps through the presets from the one typed (or the first).
func (f bookingForm) nextPreset(forward bool) string {
	cur := -1
	for i, p := range durationPresets {
		if p == strings.TrimSpace(f.duration.Value()) {
			cur = i
		}
	}
	switch {
	case cur < 0:
		cur = 1
	case forward:
		cur = min(len(durationPresets)-1, cur+1)
	default:
		cur = max(0, cur-1)
	}
	return durationPresets[cur]
}

// request checks the input; on a mistake it names the field to fix.
func (f bookingForm) request() (core.Request, field, error) {
	if len(f.devices) == 0 {
		return core.Request{}, fieldDevice, fmt.Errorf("no GPUs known yet")
	}
	a := f.devices[f.device]
	mem, err := core.ParseMemory(f.memory.Value())
	if err != nil {
		return core.Request{}, fieldMemory, err
	}
	// A first check against what was free a moment ago; the ledger decides.
	want := int64(mem.Fraction*1e6 + 0.5)
	if mem.Bytes > 0 && a.Device.MemoryTotal > 0 {
		want = int64(float64(mem.Bytes) / float64(a.Device.MemoryTotal) * 1e6)
	}
	if want > a.FreePPM {
		return core.Request{}, fieldMemory, fmt.Errorf("GPU %d has only %s (%s) free; %s asked",
			a.Device.Index, core.FormatPercent(a.FreePPM), core.FormatBytes(a.FreeBytes), mem)
	}
	d, err := core.ParseDuration(f.duration.Value())
	if err != nil {
		return core.Request{}, fieldDuration, err
	}
	return core.Request{Device: a.Device.Index, Memory: mem, Duration: d, For: strings.TrimSpace(f.forUser.Value())}, 0, nil
}

// failed shows the ledger's refusal and lets the person try again.
func (f *bookingForm) failed(err error) {
	f.busy, f.err = false, err.Error()
}

func (f bookingForm) View(width int) string {
	st := &f.c.styles
	inner := max(20, width-st.Form.GetHorizontalFrameSize())
	label := func(fl field, name string) string {
		if f.focus == fl {
			return st.Focused.Render("› " + name)
		}
		return st.Field.Render("  " + name)
	}
	var lines []string
	lines = append(lines, st.FormTitle.Render("New booking"))

	var chips []string
	for i, a := range f.devices {
		text := fmt.Sprintf("%d %s", a.Device.Index, core.FormatPercent(a.FreePPM))
		if i == f.device {
			chips = append(chips, st.ChipOn.Render("‹"+text+"›"))
		} else {
			chips = append(chips, st.Chip.Render(" "+text+" "))
		}
	}
	lines = append(lines, cut(label(fieldDevice, "GPU")+strings.Join(chips, " "), inner))
	if len(f.devices) > 0 {
		a := f.devices[f.device]
		lines = append(lines, cut(st.Field.Render("")+st.Faint.Render(fmt.Sprintf("%s · %s (%s) free · %d booking(s)",
			Printable(a.Device.Name), core.FormatPercent(a.FreePPM), core.FormatBytes(a.FreeBytes), a.Bookings)), inner))
	}
	lines = append(lines, cut(label(fieldMemory, "Memory")+fit(f.memory.View(), 15)+st.Faint.Render("a percent, fraction or size: 50%, 0.5, 40GiB"), inner))

	var presets []string
	for _, p := range durationPresets {
		if p == strings.TrimSpace(f.duration.Value()) {
			presets = append(presets, st.ChipOn.Render("["+p+"]"))
		} else {
			presets = append(presets, st.Chip.Render(" "+p+" "))
		}
	}
	lines = append(lines, cut(label(fieldDuration, "Duration")+fit(f.duration.View(), 15)+strings.Join(presets, "")+st.Faint.Render(" ←/→"), inner))
	if f.fields > int(fieldFor) {
		lines = append(lines, cut(label(fieldFor, "For user")+fit(f.forUser.View(), 15)+st.Faint.Render("a user to book for; empty: yourself"), inner))
	}
	switch {
	case f.err != "":
		lines = append(lines, cut(st.Invalid.Render("✗ "+f.err), inner))
	case f.busy:
		lines = append(lines, st.Faint.Render("booking…"))
	default:
		lines = append(lines, "")
	}
	return st.Form.Width(inner + st.Form.GetHorizontalPadding()).Render(strings.Join(lines, "\n"))
}

// height is the lines the form takes on screen: border, title, two lines
// of GPU, one per other field, and one for the message.
func (f bookingForm) height() int {
	return 2 + 1 + 2 + (f.fields - 1) + 1
}
