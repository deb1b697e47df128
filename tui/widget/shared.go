// Package widget is what every part of the app draws with: the context
// they share by pointer (styles, clock, who is looking), the styles, text
// measured in terminal cells, bars and the app's own traces of each GPU,
// the generic table with its columns and selection, the prompt on the
// status line and the text input of every field, and the memo that keeps
// a drawn part until what it shows changes. It knows no tab, no panel and
// no form: they are built on it.
package widget

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/chronos-gpu/chronos/core/domain"
)

// Shared is what every component reads, by pointer: the styles, the clock
// and who is looking. Nothing writes to it after New, so components and
// tests never see one another's changes through it.
type Shared struct {
	Styles Styles
	Now    func() time.Time
	Me     domain.Identity
	Host   string // this host in a ledger many hosts share; "" in a ledger file
	After  func(time.Duration, func(time.Time) tea.Msg) tea.Cmd
}
