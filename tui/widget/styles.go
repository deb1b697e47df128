package widget

import (
	"hash/fnv"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Styles is every look the app uses, built once from adaptive colours (one
// for light terminals, one for dark) picked from the 16 ANSI colours, so the
// app reads on any palette. lipgloss drops all colour — and bold, underline
// and reverse video with it — when NO_COLOR is set or the output is not a
// terminal; nothing here forces a profile. What carries meaning is also in
// the text: markers, brackets, the input cursor (see Plain).
type Styles struct {
	// Plain: no colour and no attributes reach the terminal, so the
	// cursor is drawn as a character.
	Plain bool

	App       lipgloss.Style
	Title     lipgloss.Style
	Header    lipgloss.Style
	Simulated lipgloss.Style
	NVML      lipgloss.Style
	Notice    lipgloss.Style
	// NoticeLine is a notice to the person about their own booking.
	NoticeLine lipgloss.Style
	Faint      lipgloss.Style
	Label      lipgloss.Style

	Tab       lipgloss.Style
	ActiveTab lipgloss.Style

	TableHeader lipgloss.Style
	Selected    lipgloss.Style
	Mine        lipgloss.Style
	EndingSoon  lipgloss.Style
	Ended       lipgloss.Style
	Unbooked    lipgloss.Style
	OverBudget  lipgloss.Style

	BarUsed   lipgloss.Style // a utilisation bar's filled part
	BarEmpty  lipgloss.Style
	BarHot    lipgloss.Style // memory in use beyond what is booked
	Spark     lipgloss.Style
	TimeUsed  lipgloss.Style
	TimeSoon  lipgloss.Style
	TimeEmpty lipgloss.Style

	UtilGraph lipgloss.Style // the history view's graphs
	MemGraph  lipgloss.Style
	IdleSpan  lipgloss.Style // a booking's idle stretch in the history view
	IdleLabel lipgloss.Style // how long it lasted, written in it

	Form      lipgloss.Style
	FormTitle lipgloss.Style
	Field     lipgloss.Style
	Focused   lipgloss.Style
	Chip      lipgloss.Style
	ChipOn    lipgloss.Style
	Invalid   lipgloss.Style
	Warning   lipgloss.Style

	Cursor      lipgloss.Style
	Placeholder lipgloss.Style

	StatusOK  lipgloss.Style
	StatusErr lipgloss.Style
	Prompt    lipgloss.Style

	// Owners colour each person's bookings, in bars and their legends.
	Owners []lipgloss.Style
}

var (
	red     = lipgloss.AdaptiveColor{Light: "1", Dark: "9"}
	green   = lipgloss.AdaptiveColor{Light: "2", Dark: "10"}
	yellow  = lipgloss.AdaptiveColor{Light: "3", Dark: "11"}
	blue    = lipgloss.AdaptiveColor{Light: "4", Dark: "12"}
	magenta = lipgloss.AdaptiveColor{Light: "5", Dark: "13"}
	cyan    = lipgloss.AdaptiveColor{Light: "6", Dark: "14"}
	subtle  = lipgloss.AdaptiveColor{Light: "8", Dark: "8"}
	strong  = lipgloss.AdaptiveColor{Light: "0", Dark: "15"}
)

// DefaultStyles returns the app's styles.
func DefaultStyles() Styles {
	s := Styles{Plain: lipgloss.ColorProfile() == termenv.Ascii}
	s.Title = lipgloss.NewStyle().Bold(true).Foreground(strong)
	s.Header = lipgloss.NewStyle()
	s.Simulated = lipgloss.NewStyle().Bold(true).Reverse(true).Foreground(magenta)
	s.NVML = lipgloss.NewStyle().Bold(true).Foreground(green)
	s.Notice = lipgloss.NewStyle().Foreground(magenta)
	s.NoticeLine = lipgloss.NewStyle().Bold(true).Foreground(yellow)
	s.Faint = lipgloss.NewStyle().Foreground(subtle)
	s.Label = lipgloss.NewStyle().Bold(true)

	s.Tab = lipgloss.NewStyle().Foreground(subtle)
	s.ActiveTab = lipgloss.NewStyle().Bold(true).Foreground(strong)

	s.TableHeader = lipgloss.NewStyle().Bold(true).Foreground(subtle)
	s.Selected = lipgloss.NewStyle().Reverse(true)
	s.Mine = lipgloss.NewStyle().Bold(true).Foreground(cyan)
	s.EndingSoon = lipgloss.NewStyle().Bold(true).Foreground(yellow)
	s.Ended = lipgloss.NewStyle().Foreground(subtle)
	s.Unbooked = lipgloss.NewStyle().Bold(true).Foreground(red)
	s.OverBudget = lipgloss.NewStyle().Bold(true).Foreground(red)

	s.BarUsed = lipgloss.NewStyle().Foreground(green)
	s.BarEmpty = lipgloss.NewStyle().Foreground(subtle)
	s.BarHot = lipgloss.NewStyle().Foreground(red)
	s.Spark = lipgloss.NewStyle().Foreground(blue)
	s.TimeUsed = lipgloss.NewStyle().Foreground(blue)
	s.TimeSoon = lipgloss.NewStyle().Foreground(yellow)
	s.TimeEmpty = lipgloss.NewStyle().Foreground(subtle)

	s.UtilGraph = lipgloss.NewStyle().Foreground(green)
	s.MemGraph = lipgloss.NewStyle().Foreground(blue)
	s.IdleSpan = lipgloss.NewStyle().Foreground(subtle)
	s.IdleLabel = lipgloss.NewStyle().Bold(true).Foreground(yellow)

	s.Form = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(blue).Padding(0, 1)
	s.FormTitle = lipgloss.NewStyle().Bold(true).Foreground(blue)
	s.Field = lipgloss.NewStyle().Width(12)
	s.Focused = lipgloss.NewStyle().Width(12).Bold(true).Foreground(blue)
	s.Chip = lipgloss.NewStyle().Foreground(subtle)
	s.ChipOn = lipgloss.NewStyle().Bold(true).Foreground(strong)
	s.Invalid = lipgloss.NewStyle().Foreground(red)
	s.Warning = lipgloss.NewStyle().Foreground(yellow)

	s.Cursor = lipgloss.NewStyle().Reverse(true)
	s.Placeholder = lipgloss.NewStyle().Italic(true).Foreground(subtle)

	s.StatusOK = lipgloss.NewStyle().Foreground(green)
	s.StatusErr = lipgloss.NewStyle().Bold(true).Foreground(red)
	s.Prompt = lipgloss.NewStyle().Bold(true).Foreground(yellow)

	// Not red: that is memory in use that no booking holds (BarHot), and
	// no owner is ever to be mistaken for it.
	for _, c := range []lipgloss.AdaptiveColor{cyan, magenta, yellow, blue, green} {
		s.Owners = append(s.Owners, lipgloss.NewStyle().Foreground(c))
	}
	return s
}

// Owner is the colour of one person, the same in every session: it is
// chosen by their name, not by the order bookings happen to be listed in.
func (s Styles) Owner(user string) lipgloss.Style {
	h := fnv.New32a()
	h.Write([]byte(user))
	return s.Owners[h.Sum32()%uint32(len(s.Owners))]
}
