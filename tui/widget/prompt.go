package widget

import (
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// Answer is what became of a prompt's question after a key.
type Answer int

const (
	StillAsking Answer = iota
	Submitted
	Cancelled
	// Other: a yes-or-no question's third answer, offered with Offer.
	Other
)

// promptKeys answer a prompt.
type promptKeys struct {
	Confirm, Other, Submit, Cancel key.Binding
}

// Prompt asks one thing on the status line: a yes-or-no question, or a
// line of text. Mistakes in the text are shown next to it (fail) and the
// prompt stays open.
type Prompt struct {
	sh       *Shared
	Keys     promptKeys
	Question string
	Confirm  bool // a yes-or-no question; else a line of text
	input    textinput.Model
	Err      string
}

func NewPrompt(sh *Shared) *Prompt {
	return &Prompt{sh: sh, Keys: promptKeys{
		Confirm: key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes")),
		Other:   key.NewBinding(key.WithDisabled()),
		Submit:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "ok")),
		Cancel:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
	}}
}

// Ask opens a yes-or-no question: y says yes, any other key no.
func (p *Prompt) Ask(question string) {
	p.Question, p.Confirm, p.Err = question, true, ""
	p.Keys.Confirm.SetEnabled(true)
	p.Keys.Confirm.SetHelp("y", "yes")
	p.Keys.Other.SetEnabled(false)
	p.Keys.Submit.SetEnabled(false)
	p.Keys.Cancel.SetEnabled(true)
	p.Keys.Cancel.SetHelp("any other key", "no")
}

// Offer adds a third answer to the yes-or-no question just asked: k,
// which desc says in the help.
func (p *Prompt) Offer(k, desc string) {
	p.Keys.Other = key.NewBinding(key.WithKeys(k), key.WithHelp(k, desc))
}

// AskText opens a line of text, starting from value; submitDesc and
// cancelDesc say in the help what enter and esc do.
func (p *Prompt) AskText(question, placeholder, value, submitDesc, cancelDesc string, width int) {
	p.Question, p.Confirm, p.Err = question, false, ""
	p.input = NewInput(p.sh, placeholder, value, width)
	p.input.Focus()
	p.input.CursorEnd()
	p.Keys.Confirm.SetEnabled(false)
	p.Keys.Other.SetEnabled(false)
	p.Keys.Submit.SetEnabled(true)
	p.Keys.Submit.SetHelp("enter", submitDesc)
	p.Keys.Cancel.SetEnabled(true)
	p.Keys.Cancel.SetHelp("esc", cancelDesc)
}

// Update takes a key and says whether the question was answered.
func (p *Prompt) Update(msg tea.KeyMsg) Answer {
	if p.Confirm {
		switch {
		case key.Matches(msg, p.Keys.Confirm):
			return Submitted
		case key.Matches(msg, p.Keys.Other):
			return Other
		}
		return Cancelled
	}
	switch {
	case key.Matches(msg, p.Keys.Submit):
		return Submitted
	case key.Matches(msg, p.Keys.Cancel):
		return Cancelled
	}
	p.input, _ = p.input.Update(msg)
	p.Err = ""
	return StillAsking
}

// Value is the text typed.
func (p *Prompt) Value() string { return p.input.Value() }

// Fail keeps the prompt open with a message about what was typed.
func (p *Prompt) Fail(err error) { p.Err = err.Error() }

func (p *Prompt) View() string {
	st := &p.sh.Styles
	line := st.Prompt.Render(p.Question)
	if !p.Confirm {
		line += InputView(p.sh, &p.input)
	}
	if p.Err != "" {
		line += " " + st.Invalid.Render("✗ "+p.Err)
	}
	return line
}

func (p *Prompt) ShortHelp() []key.Binding {
	return []key.Binding{p.Keys.Confirm, p.Keys.Other, p.Keys.Submit, p.Keys.Cancel}
}

func (p *Prompt) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }

// NewInput is a one-line text input as every field of the app has it. Its
// placeholder is an example ("e.g. 1h"), so that it never reads as a value.
func NewInput(sh *Shared, placeholder, value string, width int) textinput.Model {
	ti := textinput.New()
	ti.Prompt = ""
	ti.Placeholder = placeholder
	ti.PlaceholderStyle = sh.Styles.Placeholder
	ti.Width = width
	ti.CharLimit = 32
	ti.SetValue(value)
	return ti
}

// InputView draws an input: its text with a cursor when focused, and its
// placeholder when empty. The cursor is a reverse-video cell in colour; as
// NO_COLOR drops reverse video, it is a "▏" before the character it is on
// there, so it is never lost.
func InputView(sh *Shared, ti *textinput.Model) string {
	st := &sh.Styles
	value := []rune(ti.Value())
	if !ti.Focused() {
		if len(value) == 0 {
			return st.Placeholder.Render(ti.Placeholder)
		}
		return string(value)
	}
	pos := min(ti.Position(), len(value))
	before, under, after := string(value[:pos]), " ", ""
	if pos < len(value) {
		under, after = string(value[pos]), string(value[pos+1:])
	}
	if len(value) == 0 {
		after = st.Placeholder.Render(ti.Placeholder)
	}
	if st.Plain {
		if pos == len(value) {
			under = ""
		}
		return before + "▏" + under + after
	}
	return before + st.Cursor.Render(under) + after
}
