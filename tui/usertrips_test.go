package tui

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Typing over a preset replaces it: 45m over the preset 1h is 45m, not
// 1h45m. Once the field is edited, typing appends as usual; a preset chosen
// with ←/→ is again replaced by typing.
func TestFormTypingReplacesThePreset(t *testing.T) {
	w := newWorld(t, 1)
	m := press(t, w.model(80, 24), "n", "10%", "tab")
	require.Equal(t, fieldDuration, m.form.focus)
	require.Equal(t, "1h", m.form.duration.Value())
	m = press(t, m, "4", "5", "m")
	require.Equal(t, "45m", m.form.duration.Value())
	m = press(t, m, "backspace", "h")
	require.Equal(t, "45h", m.form.duration.Value(), "an edited field appends")
	m = press(t, m, "left", "9", "0", "m")
	require.Equal(t, "90m", m.form.duration.Value(), "a preset chosen with ←/→ is replaced too")
	m = press(t, m, "right", "backspace")
	require.Equal(t, "1", m.form.duration.Value(), "backspace edits the preset rather than replacing it")
}
