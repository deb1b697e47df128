package tui

import (
	"fmt"
	"slices"
	"strings"

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

// formKeys work in the booking form; every other key is text for a field.
type formKeys struct {
	Submit, Cancel, NextField, PrevField, Left, Right key.Binding
}

// bookingForm asks for a new booking. It checks what it can before asking
// the ledger (each mistake explained next to the form, which stays open);
// the ledger's own refusals come back the same way. Next to the chosen
// GPU's bookable share it shows the memory physically free there, and
// warns when a booking asks for more than that.
type bookingForm struct {
	sh      *shared
	keys    formKeys
	devices []core.Availability
	device  int // index into devices
	focus   field
	fields  int // fieldFor+1 for root, who may book for others

	memory, duration, forUser textinput.Model

	err  string
	busy bool // sent, waiting for the ledger's answer
}

func newBookingForm(sh *shared, r *readings) *bookingForm {
	f := &bookingForm{
		sh: sh,
		keys: formKeys{
			Submit:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "book")),
			Cancel:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
			NextField: key.NewBinding(key.WithKeys("tab", "down"), key.WithHelp("tab/↓", "next field")),
			PrevField: key.NewBinding(key.WithKeys("shift+tab", "up"), key.WithHelp("shift+tab/↑", "previous field")),
			Left:      key.NewBinding(key.WithKeys("left"), key.WithHelp("←/→", "choose")),
			Right:     key.NewBinding(key.WithKeys("right")),
		},
		memory:   newInput(sh, "e.g. 50%", "", 14),
		duration: newInput(sh, "e.g. 90m", "1h", 14),
		forUser:  newInput(sh, "e.g. alice", "", 14),
		fields:   int(fieldDuration) + 1,
	}
	if sh.me.Root() {
		f.fields = int(fieldFor) + 1
	}
	f.setReadings(r)
	// Start on the GPU with the most room.
	for i, a := range f.devices {
		if a.FreePPM > f.devices[f.device].FreePPM {
			f.device = i
		}
	}
	f.focusOn(fieldMemory)
	return f
}

// setReadings takes fresh readings, keeping the chosen GPU.
func (f *bookingForm) setReadings(r *readings) {
	idx := -1
	if f.device < len(f.devices) {
		idx = f.devices[f.device].Device.Index
	}
	f.devices, f.device = r.avail, 0
	for i, a := range f.devices {
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
			ti.CursorEnd()
		} else {
			ti.Blur()
		}
	}
	f.keys.Left.SetHelp("←/→", map[field]string{fieldDevice: "choose GPU", fieldDuration: "presets"}[fl])
	f.keys.Left.SetEnabled(fl == fieldDevice || fl == fieldDuration)
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

// update handles a key. It returns a request when the form was submitted and
// its input is valid.
func (f *bookingForm) update(msg tea.KeyMsg) *core.Request {
	k := &f.keys
	switch {
	case key.Matches(msg, k.Submit):
		req, fl, err := f.request()
		if err != nil {
			f.err = err.Error()
			f.focusOn(fl)
			return nil
		}
		f.err, f.busy = "", true
		return &req
	case key.Matches(msg, k.NextField):
		f.focusOn(field((int(f.focus) + 1) % f.fields))
		return nil
	case key.Matches(msg, k.PrevField):
		f.focusOn(field((int(f.focus) + f.fields - 1) % f.fields))
		return nil
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
		return nil
	case fieldDuration:
		if key.Matches(msg, k.Left, k.Right) {
			f.duration.SetValue(f.nextPreset(key.Matches(msg, k.Right)))
			f.duration.CursorEnd()
			return nil
		}
	}
	if in := f.input(); in != nil {
		*in, _ = in.Update(msg)
		f.err = ""
	}
	return nil
}

// nextPreset steps through the presets from the one typed (or the first).
func (f *bookingForm) nextPreset(forward bool) string {
	cur := slices.Index(durationPresets, strings.TrimSpace(f.duration.Value()))
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

// asked is the share of a's GPU the memory field asks for, in ppm.
func asked(mem core.Memory, a core.Availability) int64 {
	if mem.Bytes > 0 && a.Device.MemoryTotal > 0 {
		return int64(float64(mem.Bytes) / float64(a.Device.MemoryTotal) * 1e6)
	}
	return int64(mem.Fraction*1e6 + 0.5)
}

// request checks the input; on a mistake it names the field to fix.
func (f *bookingForm) request() (core.Request, field, error) {
	if len(f.devices) == 0 {
		return core.Request{}, fieldDevice, fmt.Errorf("no GPUs known yet")
	}
	a := f.devices[f.device]
	mem, err := core.ParseMemory(f.memory.Value())
	if err != nil {
		return core.Request{}, fieldMemory, err
	}
	// A first check against what was free a moment ago; the ledger decides.
	if asked(mem, a) > a.FreePPM {
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

// warning says when the memory asked for is more than is physically free
// on the chosen GPU, and who holds the rest, in the words `chronos create`
// uses: the ledger admits by booked shares and would book it. What is
// physically free comes from the last reading a monitor (this app's among
// them) stored in the ledger.
func (f *bookingForm) warning() string {
	if len(f.devices) == 0 {
		return ""
	}
	a := f.devices[f.device]
	mem, err := core.ParseMemory(f.memory.Value())
	if err != nil {
		return ""
	}
	bytes := mem.Bytes
	if bytes == 0 {
		bytes = uint64(float64(asked(mem, a)) / 1e6 * float64(a.Device.MemoryTotal))
	}
	if w := a.Warning(bytes); w != "" {
		return "⚠ " + Printable(w)
	}
	return ""
}

func (f *bookingForm) ShortHelp() []key.Binding {
	k := f.keys
	return []key.Binding{k.Submit, k.NextField, k.Left, k.Cancel}
}

func (f *bookingForm) FullHelp() [][]key.Binding {
	k := f.keys
	return [][]key.Binding{{k.Submit, k.NextField, k.PrevField, k.Left, k.Cancel}}
}

func (f *bookingForm) view(width int) string {
	st := &f.sh.styles
	inner := max(20, width-st.Form.GetHorizontalFrameSize())
	label := func(fl field, name string) string {
		if f.focus == fl {
			return st.Focused.Render("› " + name)
		}
		return st.Field.Render("  " + name)
	}
	input := func(ti *textinput.Model) string { return fit(inputView(f.sh, ti), 15) }
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
		// Most telling first: a narrow form cuts the end.
		detail := fmt.Sprintf("%s · %d booking(s) · %s", a.Room(), a.Bookings, Printable(a.Device.Name))
		lines = append(lines, cut(st.Field.Render("")+st.Faint.Render(detail), inner))
	}
	lines = append(lines, cut(label(fieldMemory, "Memory")+input(&f.memory)+st.Faint.Render("a percent, fraction or size"), inner))

	var presets []string
	for _, p := range durationPresets {
		if p == strings.TrimSpace(f.duration.Value()) {
			presets = append(presets, st.ChipOn.Render("["+p+"]"))
		} else {
			presets = append(presets, st.Chip.Render(" "+p+" "))
		}
	}
	lines = append(lines, cut(label(fieldDuration, "Duration")+input(&f.duration)+strings.Join(presets, "")+st.Faint.Render(" ←/→"), inner))
	if f.fields > int(fieldFor) {
		lines = append(lines, cut(label(fieldFor, "For user")+input(&f.forUser)+st.Faint.Render("a user to book for; empty: yourself"), inner))
	}
	switch w := f.warning(); {
	case f.err != "":
		lines = append(lines, cut(st.Invalid.Render("✗ "+f.err), inner))
	case f.busy:
		lines = append(lines, st.Faint.Render("booking…"))
	case w != "":
		lines = append(lines, cut(st.Warning.Render(w), inner))
	default:
		lines = append(lines, "")
	}
	return st.Form.Width(inner + st.Form.GetHorizontalPadding()).Render(strings.Join(lines, "\n"))
}

// height is the lines the form takes on screen: border, title, two lines
// of GPU, one per other field, and one for the message.
func (f *bookingForm) height() int {
	return 2 + 1 + 2 + (f.fields - 1) + 1
}
