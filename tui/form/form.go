// Package form is the app's booking form: the GPU (or several, or any),
// memory, duration, start and, for root, whom for; mistakes are explained
// beside it and a request that would fit later is offered a place in line.
package form

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
	"github.com/chronos-gpu/chronos/tui/widget"
)

// Field is one line of the booking form.
type Field int

const (
	FieldDevice Field = iota
	FieldMemory
	FieldDuration
	FieldStart
	FieldFor
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

// Booking asks for a new booking. It checks what it can before asking
// the ledger (each mistake explained next to the form, which stays open);
// the ledger's own refusals come back the same way. Next to the chosen
// GPU's bookable share it shows the memory physically free there, and
// warns when a booking asks for more than that.
//
// When the ledger says the request cannot start when asked but would fit
// later (the GPU full, a quota reached), the form says why and when, and
// enter again joins the waiting line instead (see Failed and Update).
type Booking struct {
	sh      *widget.Shared
	Keys    formKeys
	Devices []core.Availability
	Device  int // index into Devices; len(Devices): any GPU
	// Marked are the GPUs (by index) of a booking of several, chosen with
	// space; none: the one under the cursor. Count is how many GPUs "any"
	// asks for.
	Marked map[int]bool
	Count  int
	Focus  Field
	Fields int // FieldFor+1 for root, who may book for others

	Memory, Duration, start, forUser textinput.Model
	// preset is true while the duration holds a preset, as offered or as
	// chosen with ←/→: the first text typed there replaces it.
	preset bool

	Err  string
	Busy bool // sent, waiting for the ledger's answer
	// Later is the ledger's answer that the request would fit later; while
	// the fields stay as they were, submitting waits in line.
	Later *admission.FitsLaterError
}

func New(sh *widget.Shared, avail []core.Availability) *Booking {
	f := &Booking{
		sh: sh,
		Keys: formKeys{
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
		Marked:   map[int]bool{},
		Count:    1,
		Memory:   widget.NewInput(sh, "e.g. 50%", "", 14),
		Duration: widget.NewInput(sh, "e.g. 90m", "1h", 14),
		start:    widget.NewInput(sh, "now", "", 14),
		forUser:  widget.NewInput(sh, "e.g. alice", "", 14),
		Fields:   int(FieldStart) + 1,
		preset:   true,
	}
	if sh.Me.Root() {
		f.Fields = int(FieldFor) + 1
	}
	f.SetAvailable(avail)
	// Start on the GPU with the most room.
	for i, a := range f.Devices {
		if a.FreePPM > f.Devices[f.Device].FreePPM {
			f.Device = i
		}
	}
	f.focusOn(FieldMemory)
	return f
}

// SetAvailable takes a fresh reading of the room on each GPU, keeping the
// chosen GPU.
func (f *Booking) SetAvailable(avail []core.Availability) {
	idx, anyGPU := -1, f.Device == len(f.Devices) && len(f.Devices) > 0
	if f.Device < len(f.Devices) {
		idx = f.Devices[f.Device].Device.Index
	}
	f.Devices, f.Device = avail, 0
	if anyGPU {
		f.Device = len(f.Devices)
	}
	for i, a := range f.Devices {
		if a.Device.Index == idx {
			f.Device = i
		}
	}
	for g := range f.Marked { // a GPU gone from the readings is no longer chosen
		if !slices.ContainsFunc(f.Devices, func(a core.Availability) bool { return a.Device.Index == g }) {
			delete(f.Marked, g)
		}
	}
	f.Count = min(f.Count, max(1, len(f.Devices)))
}

func (f *Booking) focusOn(fl Field) {
	f.Focus = fl
	for i, ti := range []*textinput.Model{&f.Memory, &f.Duration, &f.start, &f.forUser} {
		if Field(i+1) == fl {
			ti.Focus()
			ti.CursorEnd()
		} else {
			ti.Blur()
		}
	}
	f.Keys.Left.SetHelp("←/→", map[Field]string{FieldDevice: "choose GPU", FieldDuration: "presets"}[fl])
	f.Keys.Left.SetEnabled(fl == FieldDevice || fl == FieldDuration)
	f.Keys.Mark.SetEnabled(fl == FieldDevice)
	f.Keys.More.SetEnabled(fl == FieldDevice)
}

func (f *Booking) input() *textinput.Model {
	switch f.Focus {
	case FieldMemory:
		return &f.Memory
	case FieldDuration:
		return &f.Duration
	case FieldStart:
		return &f.start
	case FieldFor:
		return &f.forUser
	}
	return nil
}

// Update handles a key. It returns a request when the form was submitted and
// its input is valid, and whether it is to wait in line: the ledger said it
// would fit later, and nothing was changed since.
func (f *Booking) Update(msg tea.KeyMsg) (req *core.Request, wait bool) {
	k := &f.Keys
	switch {
	case key.Matches(msg, k.Submit):
		r, fl, err := f.request()
		if err != nil {
			f.Err, f.Later = err.Error(), nil
			f.setOffer()
			f.focusOn(fl)
			return nil, false
		}
		f.Err, f.Busy = "", true
		return &r, f.Later != nil
	case key.Matches(msg, k.NextField):
		f.focusOn(Field((int(f.Focus) + 1) % f.Fields))
		return nil, false
	case key.Matches(msg, k.PrevField):
		f.focusOn(Field((int(f.Focus) + f.Fields - 1) % f.Fields))
		return nil, false
	}
	// Anything else changes the request: the ledger's answer no longer holds.
	defer f.setOffer()
	f.Later = nil
	switch f.Focus {
	case FieldDevice:
		f.deviceKey(msg)
		f.Err = ""
		return nil, false
	case FieldDuration:
		if key.Matches(msg, k.Left, k.Right) {
			f.Duration.SetValue(f.nextPreset(key.Matches(msg, k.Right)))
			f.Duration.CursorEnd()
			f.preset = true
			return nil, false
		}
		if f.preset && msg.Type == tea.KeyRunes {
			f.Duration.SetValue("")
		}
		f.preset = false
	}
	if in := f.input(); in != nil {
		*in, _ = in.Update(msg)
		f.Err = ""
	}
	return nil, false
}

// deviceKey handles a key in the GPU row: move between GPUs (or type one),
// mark several, and on any ask for more or fewer.
func (f *Booking) deviceKey(msg tea.KeyMsg) {
	k := &f.Keys
	switch s := msg.String(); {
	case key.Matches(msg, k.Left) || s == "h":
		f.Device = max(0, f.Device-1)
	case key.Matches(msg, k.Right) || s == "l":
		f.Device = min(len(f.Devices), f.Device+1) // the last is any
	case s == "a":
		f.Device = len(f.Devices)
	case key.Matches(msg, k.Mark):
		if a, ok := f.chosen(); ok {
			f.Marked[a.Device.Index] = !f.Marked[a.Device.Index]
			if !f.Marked[a.Device.Index] {
				delete(f.Marked, a.Device.Index)
			}
		}
	case key.Matches(msg, k.More):
		f.Device, f.Count = len(f.Devices), min(len(f.Devices), f.Count+1)
	case key.Matches(msg, k.Fewer):
		f.Device, f.Count = len(f.Devices), max(1, f.Count-1)
	case len(s) == 1 && s[0] >= '0' && s[0] <= '9':
		for i, a := range f.Devices {
			if a.Device.Index == int(s[0]-'0') {
				f.Device = i
			}
		}
	}
}

// chosen is the chosen GPU's room, and false for any GPU.
func (f *Booking) chosen() (core.Availability, bool) {
	if f.Device < len(f.Devices) {
		return f.Devices[f.Device], true
	}
	return core.Availability{}, false
}

// nextPreset steps through the presets from the one typed (or the first).
func (f *Booking) nextPreset(forward bool) string {
	cur := slices.Index(durationPresets, strings.TrimSpace(f.Duration.Value()))
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
func (f *Booking) request() (core.Request, Field, error) {
	if len(f.Devices) == 0 {
		return core.Request{}, FieldDevice, fmt.Errorf("no GPUs known yet")
	}
	req := core.Request{Device: domain.AnyDevice}
	switch a, ok := f.chosen(); {
	case len(f.Marked) > 0:
		gpus := slices.Sorted(maps.Keys(f.Marked))
		req.Device = gpus[0]
		if len(gpus) > 1 {
			req.Devices = gpus
		}
	case ok:
		req.Device = a.Device.Index
	case f.Count > 1:
		req.Count = f.Count
	}
	mem, err := human.ParseMemory(f.Memory.Value())
	if err != nil {
		return core.Request{}, FieldMemory, err
	}
	// Whether it fits now is the ledger's to say: if not, it says when it
	// would, and the form offers to wait in line.
	d, err := human.ParseDuration(f.Duration.Value())
	if err != nil {
		return core.Request{}, FieldDuration, err
	}
	req.Memory, req.Duration, req.For = mem, d, strings.TrimSpace(f.forUser.Value())
	if s := strings.TrimSpace(f.start.Value()); s != "" && s != "now" {
		// The parser --at uses, on the app's clock.
		if req.Start, err = human.ParseStart(s, f.sh.Now()); err != nil {
			return core.Request{}, FieldStart, err
		}
	}
	return req, 0, nil
}

// Failed shows the ledger's refusal and lets the person try again; one that
// would fit later is offered to wait in line.
func (f *Booking) Failed(err error) {
	f.Busy, f.Err, f.Later = false, err.Error(), nil
	if errors.As(err, &f.Later) {
		f.Err = f.Later.Why.Error()
	}
	f.setOffer()
}

// setOffer says in the help what enter does: book, or wait in line.
func (f *Booking) setOffer() {
	if f.Later != nil {
		f.Keys.Submit.SetHelp("enter", "wait in line")
	} else {
		f.Keys.Submit.SetHelp("enter", "book")
	}
}

// Warning says when the memory asked for is more than is physically free
// on the chosen GPU, and who holds the rest, in the words `chronos create`
// uses: the ledger admits by booked shares and would book it. What is
// physically free comes from the last reading a monitor (this app's among
// them) stored in the ledger.
func (f *Booking) Warning() string {
	a, ok := f.chosen()
	if !ok || len(f.Marked) > 0 {
		return ""
	}
	mem, err := human.ParseMemory(f.Memory.Value())
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

func (f *Booking) ShortHelp() []key.Binding {
	k := f.Keys
	return []key.Binding{k.Submit, k.NextField, k.Left, k.Mark, k.Cancel}
}

func (f *Booking) FullHelp() [][]key.Binding {
	k := f.Keys
	return [][]key.Binding{{k.Submit, k.NextField, k.PrevField, k.Left, k.Mark, k.More, k.Cancel}}
}

func (f *Booking) View(width int) string {
	st := &f.sh.Styles
	inner := max(20, width-st.Form.GetHorizontalFrameSize())
	label := func(fl Field, name string) string {
		if f.Focus == fl {
			return st.Focused.Render("› " + name)
		}
		return st.Field.Render("  " + name)
	}
	input := func(ti *textinput.Model) string { return widget.Fit(widget.InputView(f.sh, ti), 15) }
	var lines []string
	lines = append(lines, st.FormTitle.Render("New booking"))

	var chips []string
	for i, a := range f.Devices {
		text := fmt.Sprintf("%d %s", a.Device.Index, human.FormatPercent(a.FreePPM))
		if f.Marked[a.Device.Index] {
			text = "✓" + text
		}
		chips = append(chips, chip(st, text, i == f.Device))
	}
	if len(f.Devices) > 0 {
		text := "any"
		if f.Count > 1 {
			text = fmt.Sprintf("any×%d", f.Count)
		}
		chips = append(chips, chip(st, text, f.Device == len(f.Devices) && len(f.Marked) == 0))
	}
	lines = append(lines, widget.Cut(label(FieldDevice, "GPU")+strings.Join(chips, " "), inner))
	for _, l := range f.gpuDetail(inner) {
		lines = append(lines, st.Field.Render("")+st.Faint.Render(l))
	}
	lines = append(lines, widget.Cut(label(FieldMemory, "Memory")+input(&f.Memory)+st.Faint.Render("a percent, fraction or size"), inner))

	var presets []string
	for _, p := range durationPresets {
		if p == strings.TrimSpace(f.Duration.Value()) {
			presets = append(presets, st.ChipOn.Render("["+p+"]"))
		} else {
			presets = append(presets, st.Chip.Render(" "+p+" "))
		}
	}
	lines = append(lines, widget.Cut(label(FieldDuration, "Duration")+input(&f.Duration)+strings.Join(presets, "")+st.Faint.Render(" ←/→"), inner))
	lines = append(lines, widget.Cut(label(FieldStart, "Start")+input(&f.start)+st.Faint.Render("now, 14:00, tomorrow 09:00, +2h"), inner))
	if f.Fields > int(FieldFor) {
		lines = append(lines, widget.Cut(label(FieldFor, "For user")+input(&f.forUser)+st.Faint.Render("a user to book for; empty: yourself"), inner))
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
func (f *Booking) message(width int) (msg []string, style lipgloss.Style, offer []string) {
	st := &f.sh.Styles
	if f.Later != nil && !f.Busy {
		offer = widget.Wrap(fmt.Sprintf("It would fit at %s: enter waits in line (while this app is open)",
			human.FormatTime(f.Later.At, f.sh.Now())), width, 2)
	}
	style = st.Warning
	switch w := f.Warning(); {
	case f.Err != "":
		msg, style = widget.Wrap("✗ "+human.Printable(f.Err), width, formMaxMessageLines), st.Invalid
	case f.Busy:
		msg, style = []string{"booking…"}, st.Faint
	case w != "":
		msg = widget.Wrap(w, width, formMaxMessageLines)
	}
	return msg, style, offer
}

// gpuDetail is what the chosen GPU offers — room, bookings, name, most
// telling first — wrapped under the GPU chips in up to two lines.
func (f *Booking) gpuDetail(inner int) []string {
	var detail string
	a, ok := f.chosen()
	switch {
	case len(f.Marked) > 0:
		detail = fmt.Sprintf("GPU %s as one booking: the same share of each, all or nothing (space adds or removes a GPU)",
			human.FormatGPUs("", slices.Sorted(maps.Keys(f.Marked))))
	case ok:
		detail = fmt.Sprintf("%s · %d %s · %s", a.Room(), a.Bookings, widget.Plural(a.Bookings, "booking", "bookings"), human.Printable(a.Device.Name))
	case f.Count > 1:
		detail = fmt.Sprintf("the %d best-connected GPUs with room, as one booking (+/- how many)", f.Count)
	case len(f.Devices) > 0:
		detail = "whichever GPU has room first (+ asks for several)"
	}
	if detail == "" {
		return nil
	}
	return widget.Wrap(detail, inner-lipgloss.Width(f.sh.Styles.Field.Render("")), 2)
}

// messageLines is how many lines the message and the offer take.
func (f *Booking) messageLines(width int) int {
	msg, _, offer := f.message(width)
	return max(formMessageLines, len(msg)+len(offer))
}

// Height is the lines the form takes on screen at width: border, title,
// the GPU chips and their detail (one or two lines), one per other field, and those of the message and
// the offer to wait in line.
func (f *Booking) Height(width int) int {
	inner := max(20, width-f.sh.Styles.Form.GetHorizontalFrameSize())
	return 2 + 1 + 1 + max(1, len(f.gpuDetail(inner))) + (f.Fields - 1) + f.messageLines(inner)
}

// The form's last lines, for its message and the offer to wait in line:
// two at least, a long refusal taking up to formMaxMessageLines.
const (
	formMessageLines    = 2
	formMaxMessageLines = 5
)

// chip is one choice of a row of them, marked when chosen.
func chip(st *widget.Styles, text string, on bool) string {
	if on {
		return st.ChipOn.Render("‹" + text + "›")
	}
	return st.Chip.Render(" " + text + " ")
}
