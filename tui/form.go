package tui

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

// field is one line of the booking form.
type field int

const (
	fieldDevice field = iota
	fieldMemory
	fieldDuration
	fieldStart
	fieldFor
)

// durationPresets are offered in the form; any other duration can be typed.
var durationPresets = []string{"30m", "1h", "2h", "4h", "8h"}

// formKeys work in the booking form; every other key is text for a field.
type formKeys struct {
	Submit, Cancel, NextField, PrevField, Left, Right key.Binding
	// Mark adds the GPU under the cursor to a booking of several, or
	// takes it out; More and Fewer change how many GPUs "any" asks for.
	Mark, More, Fewer key.Binding
}

// bookingForm asks for a new booking. It checks what it can before asking
// the ledger (each mistake explained next to the form, which stays open);
// the ledger's own refusals come back the same way. Next to the chosen
// GPU's bookable share it shows the memory physically free there, and
// warns when a booking asks for more than that.
//
// When the ledger says the request cannot start when asked but would fit
// later (the GPU full, a quota reached), the form says why and when, and
// enter again joins the waiting line instead (see offerWait).
type bookingForm struct {
	sh      *shared
	keys    formKeys
	devices []core.Availability
	device  int // index into devices; len(devices): any GPU
	// marked are the GPUs (by index) of a booking of several, chosen with
	// space; none: the one under the cursor. count is how many GPUs "any"
	// asks for.
	marked map[int]bool
	count  int
	focus  field
	fields int // fieldFor+1 for root, who may book for others

	memory, duration, start, forUser textinput.Model
	// preset is true while the duration holds a preset, as offered or as
	// chosen with ←/→: the first text typed there replaces it.
	preset bool

	err  string
	busy bool // sent, waiting for the ledger's answer
	// later is the ledger's answer that the request would fit later; while
	// the fields stay as they were, submitting waits in line.
	later *admission.FitsLaterError
}

func newBookingForm(sh *shared, r *readings) *bookingForm {
	f := &bookingForm{
		sh: sh,
		keys: formKeys{
			Submit:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "book")),
			Cancel:    key.NewBinding(key.WithKeys("esc", "ctrl+c"), key.WithHelp("esc", "cancel")),
			NextField: key.NewBinding(key.WithKeys("tab", "down"), key.WithHelp("tab/↓", "next field")),
			PrevField: key.NewBinding(key.WithKeys("shift+tab", "up"), key.WithHelp("shift+tab/↑", "previous field")),
			Left:      key.NewBinding(key.WithKeys("left"), key.WithHelp("←/→", "choose")),
			Right:     key.NewBinding(key.WithKeys("right")),
			Mark:      key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "several GPUs")),
			More:      key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+/-", "how many (any)")),
			Fewer:     key.NewBinding(key.WithKeys("-")),
		},
		marked:   map[int]bool{},
		count:    1,
		memory:   newInput(sh, "e.g. 50%", "", 14),
		duration: newInput(sh, "e.g. 90m", "1h", 14),
		start:    newInput(sh, "now", "", 14),
		forUser:  newInput(sh, "e.g. alice", "", 14),
		fields:   int(fieldStart) + 1,
		preset:   true,
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
	idx, anyGPU := -1, f.device == len(f.devices) && len(f.devices) > 0
	if f.device < len(f.devices) {
		idx = f.devices[f.device].Device.Index
	}
	f.devices, f.device = r.avail, 0
	if anyGPU {
		f.device = len(f.devices)
	}
	for i, a := range f.devices {
		if a.Device.Index == idx {
			f.device = i
		}
	}
	for g := range f.marked { // a GPU gone from the readings is no longer chosen
		if !slices.ContainsFunc(f.devices, func(a core.Availability) bool { return a.Device.Index == g }) {
			delete(f.marked, g)
		}
	}
	f.count = min(f.count, max(1, len(f.devices)))
}

func (f *bookingForm) focusOn(fl field) {
	f.focus = fl
	for i, ti := range []*textinput.Model{&f.memory, &f.duration, &f.start, &f.forUser} {
		if field(i+1) == fl {
			ti.Focus()
			ti.CursorEnd()
		} else {
			ti.Blur()
		}
	}
	f.keys.Left.SetHelp("←/→", map[field]string{fieldDevice: "choose GPU", fieldDuration: "presets"}[fl])
	f.keys.Left.SetEnabled(fl == fieldDevice || fl == fieldDuration)
	f.keys.Mark.SetEnabled(fl == fieldDevice)
	f.keys.More.SetEnabled(fl == fieldDevice)
}

func (f *bookingForm) input() *textinput.Model {
	switch f.focus {
	case fieldMemory:
		return &f.memory
	case fieldDuration:
		return &f.duration
	case fieldStart:
		return &f.start
	case fieldFor:
		return &f.forUser
	}
	return nil
}

// update handles a key. It returns a request when the form was submitted and
// its input is valid, and whether it is to wait in line: the ledger said it
// would fit later, and nothing was changed since.
func (f *bookingForm) update(msg tea.KeyMsg) (req *core.Request, wait bool) {
	k := &f.keys
	switch {
	case key.Matches(msg, k.Submit):
		r, fl, err := f.request()
		if err != nil {
			f.err, f.later = err.Error(), nil
			f.setOffer()
			f.focusOn(fl)
			return nil, false
		}
		f.err, f.busy = "", true
		return &r, f.later != nil
	case key.Matches(msg, k.NextField):
		f.focusOn(field((int(f.focus) + 1) % f.fields))
		return nil, false
	case key.Matches(msg, k.PrevField):
		f.focusOn(field((int(f.focus) + f.fields - 1) % f.fields))
		return nil, false
	}
	// Anything else changes the request: the ledger's answer no longer holds.
	defer f.setOffer()
	f.later = nil
	switch f.focus {
	case fieldDevice:
		f.deviceKey(msg)
		f.err = ""
		return nil, false
	case fieldDuration:
		if key.Matches(msg, k.Left, k.Right) {
			f.duration.SetValue(f.nextPreset(key.Matches(msg, k.Right)))
			f.duration.CursorEnd()
			f.preset = true
			return nil, false
		}
		if f.preset && msg.Type == tea.KeyRunes {
			f.duration.SetValue("")
		}
		f.preset = false
	}
	if in := f.input(); in != nil {
		*in, _ = in.Update(msg)
		f.err = ""
	}
	return nil, false
}

// deviceKey handles a key in the GPU row: move between GPUs (or type one),
// mark several, and on any ask for more or fewer.
func (f *bookingForm) deviceKey(msg tea.KeyMsg) {
	k := &f.keys
	switch s := msg.String(); {
	case key.Matches(msg, k.Left) || s == "h":
		f.device = max(0, f.device-1)
	case key.Matches(msg, k.Right) || s == "l":
		f.device = min(len(f.devices), f.device+1) // the last is any
	case s == "a":
		f.device = len(f.devices)
	case key.Matches(msg, k.Mark):
		if a, ok := f.chosen(); ok {
			f.marked[a.Device.Index] = !f.marked[a.Device.Index]
			if !f.marked[a.Device.Index] {
				delete(f.marked, a.Device.Index)
			}
		}
	case key.Matches(msg, k.More):
		f.device, f.count = len(f.devices), min(len(f.devices), f.count+1)
	case key.Matches(msg, k.Fewer):
		f.device, f.count = len(f.devices), max(1, f.count-1)
	case len(s) == 1 && s[0] >= '0' && s[0] <= '9':
		for i, a := range f.devices {
			if a.Device.Index == int(s[0]-'0') {
				f.device = i
			}
		}
	}
}

// chosen is the chosen GPU's room, and false for any GPU.
func (f *bookingForm) chosen() (core.Availability, bool) {
	if f.device < len(f.devices) {
		return f.devices[f.device], true
	}
	return core.Availability{}, false
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
func asked(mem human.Memory, a core.Availability) int64 {
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
	req := core.Request{Device: domain.AnyDevice}
	switch a, ok := f.chosen(); {
	case len(f.marked) > 0:
		gpus := slices.Sorted(maps.Keys(f.marked))
		req.Device = gpus[0]
		if len(gpus) > 1 {
			req.Devices = gpus
		}
	case ok:
		req.Device = a.Device.Index
	case f.count > 1:
		req.Count = f.count
	}
	mem, err := human.ParseMemory(f.memory.Value())
	if err != nil {
		return core.Request{}, fieldMemory, err
	}
	// Whether it fits now is the ledger's to say: if not, it says when it
	// would, and the form offers to wait in line.
	d, err := human.ParseDuration(f.duration.Value())
	if err != nil {
		return core.Request{}, fieldDuration, err
	}
	req.Memory, req.Duration, req.For = mem, d, strings.TrimSpace(f.forUser.Value())
	if s := strings.TrimSpace(f.start.Value()); s != "" && s != "now" {
		// The parser --at uses, on the app's clock.
		if req.Start, err = human.ParseStart(s, f.sh.now()); err != nil {
			return core.Request{}, fieldStart, err
		}
	}
	return req, 0, nil
}

// failed shows the ledger's refusal and lets the person try again; one that
// would fit later is offered to wait in line.
func (f *bookingForm) failed(err error) {
	f.busy, f.err, f.later = false, err.Error(), nil
	if errors.As(err, &f.later) {
		f.err = f.later.Why.Error()
	}
	f.setOffer()
}

// setOffer says in the help what enter does: book, or wait in line.
func (f *bookingForm) setOffer() {
	if f.later != nil {
		f.keys.Submit.SetHelp("enter", "wait in line")
	} else {
		f.keys.Submit.SetHelp("enter", "book")
	}
}

// warning says when the memory asked for is more than is physically free
// on the chosen GPU, and who holds the rest, in the words `chronos create`
// uses: the ledger admits by booked shares and would book it. What is
// physically free comes from the last reading a monitor (this app's among
// them) stored in the ledger.
func (f *bookingForm) warning() string {
	a, ok := f.chosen()
	if !ok || len(f.marked) > 0 {
		return ""
	}
	mem, err := human.ParseMemory(f.memory.Value())
	if err != nil {
		return ""
	}
	bytes := mem.Bytes
	if bytes == 0 {
		bytes = uint64(float64(asked(mem, a)) / 1e6 * float64(a.Device.MemoryTotal))
	}
	if w := a.Warning(bytes); w != "" {
		return "⚠ " + human.Printable(w)
	}
	return ""
}

func (f *bookingForm) ShortHelp() []key.Binding {
	k := f.keys
	return []key.Binding{k.Submit, k.NextField, k.Left, k.Mark, k.Cancel}
}

func (f *bookingForm) FullHelp() [][]key.Binding {
	k := f.keys
	return [][]key.Binding{{k.Submit, k.NextField, k.PrevField, k.Left, k.Mark, k.More, k.Cancel}}
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
		text := fmt.Sprintf("%d %s", a.Device.Index, human.FormatPercent(a.FreePPM))
		if f.marked[a.Device.Index] {
			text = "✓" + text
		}
		chips = append(chips, chip(st, text, i == f.device))
	}
	if len(f.devices) > 0 {
		text := "any"
		if f.count > 1 {
			text = fmt.Sprintf("any×%d", f.count)
		}
		chips = append(chips, chip(st, text, f.device == len(f.devices) && len(f.marked) == 0))
	}
	lines = append(lines, cut(label(fieldDevice, "GPU")+strings.Join(chips, " "), inner))
	for _, l := range f.gpuDetail(inner) {
		lines = append(lines, st.Field.Render("")+st.Faint.Render(l))
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
	lines = append(lines, cut(label(fieldStart, "Start")+input(&f.start)+st.Faint.Render("now, 14:00, tomorrow 09:00, +2h"), inner))
	if f.fields > int(fieldFor) {
		lines = append(lines, cut(label(fieldFor, "For user")+input(&f.forUser)+st.Faint.Render("a user to book for; empty: yourself"), inner))
	}
	// The message and the offer to wait take the last lines, two at least
	// and more for a long message, so that who holds the GPU and until
	// when is read in full.
	msg, msgStyle, offer := f.message(inner)
	for i := range f.messageLines(inner) {
		switch {
		case i < len(msg):
			lines = append(lines, msgStyle.Render(msg[i]))
		case i < len(msg)+len(offer):
			lines = append(lines, st.Warning.Render(offer[i-len(msg)]))
		default:
			lines = append(lines, "")
		}
	}
	return st.Form.Width(inner + st.Form.GetHorizontalPadding()).Render(strings.Join(lines, "\n"))
}

// message is the form's message (a refusal, "booking…" or a warning)
// and its offer to wait in line, each wrapped to width.
func (f *bookingForm) message(width int) (msg []string, style lipgloss.Style, offer []string) {
	st := &f.sh.styles
	if f.later != nil && !f.busy {
		offer = wrap(fmt.Sprintf("It would fit at %s: enter waits in line (while this app is open)",
			human.FormatTime(f.later.At, f.sh.now())), width, 2)
	}
	style = st.Warning
	switch w := f.warning(); {
	case f.err != "":
		msg, style = wrap("✗ "+human.Printable(f.err), width, formMaxMessageLines), st.Invalid
	case f.busy:
		msg, style = []string{"booking…"}, st.Faint
	case w != "":
		msg = wrap(w, width, formMaxMessageLines)
	}
	return msg, style, offer
}

// gpuDetail is what the chosen GPU offers — room, bookings, name, most
// telling first — wrapped under the GPU chips in up to two lines.
func (f *bookingForm) gpuDetail(inner int) []string {
	var detail string
	a, ok := f.chosen()
	switch {
	case len(f.marked) > 0:
		detail = fmt.Sprintf("GPU %s as one booking: the same share of each, all or nothing (space adds or removes a GPU)",
			human.FormatGPUs("", slices.Sorted(maps.Keys(f.marked))))
	case ok:
		detail = fmt.Sprintf("%s · %d %s · %s", a.Room(), a.Bookings, plural(a.Bookings, "booking", "bookings"), human.Printable(a.Device.Name))
	case f.count > 1:
		detail = fmt.Sprintf("the %d best-connected GPUs with room, as one booking (+/- how many)", f.count)
	case len(f.devices) > 0:
		detail = "whichever GPU has room first (+ asks for several)"
	}
	if detail == "" {
		return nil
	}
	return wrap(detail, inner-lipgloss.Width(f.sh.styles.Field.Render("")), 2)
}

// messageLines is how many lines the message and the offer take.
func (f *bookingForm) messageLines(width int) int {
	msg, _, offer := f.message(width)
	return max(formMessageLines, len(msg)+len(offer))
}

// height is the lines the form takes on screen at width: border, title,
// the GPU chips and their detail (one or two lines), one per other field, and those of the message and
// the offer to wait in line.
func (f *bookingForm) height(width int) int {
	inner := max(20, width-f.sh.styles.Form.GetHorizontalFrameSize())
	return 2 + 1 + 1 + max(1, len(f.gpuDetail(inner))) + (f.fields - 1) + f.messageLines(inner)
}

// The form's last lines, for its message and the offer to wait in line:
// two at least, a long refusal taking up to formMaxMessageLines.
const (
	formMessageLines    = 2
	formMaxMessageLines = 5
)

// chip is one choice of a row of them, marked when chosen.
func chip(st *Styles, text string, on bool) string {
	if on {
		return st.ChipOn.Render("‹" + text + "›")
	}
	return st.Chip.Render(" " + text + " ")
}
