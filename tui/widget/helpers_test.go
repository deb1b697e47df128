package widget

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// t0 is when every test happens.
var t0 = time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)

// keyMsg is one key as the terminal sends it: typed text.
func keyMsg(k string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)} }
