package tui

import (
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// answer is what became of a prompt's question after a key.
type answer int

const (
	stillAsking answer = iota
	submitted
	cancelled
	// other: a yes-or-no question's third answer, offered with offer.
	other
)

// promptKeys answer a prompt.
type promptKeys struct {
	Confirm, Other, Submit, Cancel key.Binding
}

// prompt asks one thing on the status line: a yes-or-no question, or a
// line of text. Mistakes in the text are shown next to it (fail) and the
// prompt stays open.
type prompt struct {
	sh       *shared
	keys     promptKeys
	question string
	confirm  bool // a yes-or-no question; else a line of text
	input    textinput.Model
	err      string
}

func newPrompt(sh *shared) *prompt {
	return &prompt{sh: sh, keys: promptKeys{
		Confirm: key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes")),
		Other:   key.NewBinding(key.WithDisabled()),
		Submit:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "ok")),
		Cancel:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
	}}
}

// ask opens a yes-or-no question: y says yes, any other key no.
func (p *prompt) ask(question string) {
	p.question, p.confirm, p.err = question, true, ""
	p.keys.Confirm.SetEnabled(true)
	p.keys.Confirm.SetHelp("y", "yes")
	p.keys.Other.SetEnabled(false)
	p.keys.Submit.SetEnabled(false)
	p.keys.Cancel.SetEnabled(true)
	p.keys.Cancel.SetHelp("any other key", "no")
}

// offer adds a third answer to the yes-or-no question just asked: k,
// which desc says in the help.
func (p *prompt) offer(k, desc string) {
	p.keys.Other = key.NewBinding(key.WithKeys(k), key.WithHelp(k, desc))
}

// askText opens a line of text, starting from value; submitDesc and
// cancelDesc say in the help what enter and esc do.
func (p *prompt) askText(question, placeholder, value, submitDesc, cancelDesc string, width int) {
	p.question, p.confirm, p.err = question, false, ""
	p.input = newInput(p.sh, placeholder, value, width)
	p.input.Focus()
	p.input.CursorEnd()
	p.keys.Confirm.SetEnabled(false)
	p.keys.Other.SetEnabled(false)
	p.keys.Submit.SetEnabled(true)
	p.keys.Submit.SetHelp("enter", submitDesc)
	p.keys.Cancel.SetEnabled(true)
	p.keys.Cancel.SetHelp("esc", cancelDesc)
}

// update takes a key and says whether the question was answered.
func (p *prompt) update(msg tea.KeyMsg) answer {
	if p.confirm {
		switch {
		case key.Matches(msg, p.keys.Confirm):
			return submitted
		case key.Matches(msg, p.keys.Other):
			return other
		}
		return cancelled
	}
	switch {
	case key.Matches(msg, p.keys.Submit):
		return submitted
	case key.Matches(msg, p.keys.Cancel):
		return cancelled
	}
	p.input, _ = p.input.Update(msg)
	p.err = ""
	return stillAsking
}

// value is the text typed.
func (p *prompt) value() string { return p.input.Value() }

// fail keeps the prompt open with a message about what was typed.
func (p *prompt) fail(err error) { p.err = err.Error() }

func (p *prompt) view() string {
	st := &p.sh.styles
	line := st.Prompt.Render(p.question)
	if !p.confirm {
		line += inputView(p.sh, &p.input)
	}
	if p.err != "" {
		line += " " + st.Invalid.Render("✗ "+p.err)
	}
	return line
}

func (p *prompt) ShortHelp() []key.Binding {
	return []key.Binding{p.keys.Confirm, p.keys.Other, p.keys.Submit, p.keys.Cancel}
}

func (p *prompt) FullHelp() [][]key.Binding { return [][]key.Binding{p.ShortHelp()} }

// newInput is a one-line text input as every field of the app has it. Its
// placeholder is an example ("e.g. 1h"), so that it never reads as a value.
func newInput(sh *shared, placeholder, value string, width int) textinput.Model {
	ti := textinput.New()
	ti.Prompt = ""
	ti.Placeholder = placeholder
	ti.PlaceholderStyle = sh.styles.Placeholder
	ti.Width = width
	ti.CharLimit = 32
	ti.SetValue(value)
	return ti
}

// inputView draws an input: its text with a cursor when focused, and its
// placeholder when empty. The cursor is a reverse-video cell in colour; as
// NO_COLOR drops reverse video, it is a "▏" before the character it is on
// there, so it is never lost.
func inputView(sh *shared, ti *textinput.Model) string {
	st := &sh.styles
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
	if st.plain {
		if pos == len(value) {
			under = ""
		}
		return before + "▏" + under + after
	}
	return before + st.Cursor.Render(under) + after
}
