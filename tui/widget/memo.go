package widget

// Memo keeps one drawn part of the screen and what it was drawn from, so
// that a part that did not change is not drawn again: lipgloss's styling
// and measuring are most of what a frame costs.
type Memo struct {
	from, drawn string
	valid       bool
}

// Draw is what draw made, drawn again only when from is not what it was
// drawn from.
func (c *Memo) Draw(from string, draw func() string) string {
	if !c.valid || c.from != from {
		c.from, c.drawn, c.valid = from, draw(), true
	}
	return c.drawn
}
