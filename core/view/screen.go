package view

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"

	"github.com/chronos-gpu/chronos/core/clock"
	"github.com/chronos-gpu/chronos/core/human"
)

// FitScreen is text drawn from the top left of a width×height screen: each
// line cut to the width and cleared to its end, lines past the height
// left out, and the rest of the screen cleared.
func FitScreen(text string, width, height int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	var b strings.Builder
	b.WriteString(ansi.CursorHomePosition)
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(ansi.Truncate(l, width, ""))
		b.WriteString(ansi.EraseLineRight)
	}
	b.WriteString(ansi.EraseScreenBelow)
	return b.String()
}

// WatchScreen prints a frame every interval (every; interval as a person
// writes it) until ctx ends. On a terminal each frame replaces the last on
// the alternate screen, cut to the window, and the screen is put back as
// it was at the end; elsewhere frames follow one another. An error in the
// first frame ends it; later ones are shown in the frame.
func WatchScreen(ctx context.Context, out io.Writer, every time.Duration, interval, title string, frame func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := frame(&buf); err != nil {
		return err
	}
	screen, tty := out.(*os.File)
	tty = tty && IsTerminal(screen)
	if tty {
		// The alternate screen, without a cursor; and back at the end.
		fmt.Fprint(out, ansi.SetModeAltScreenSaveCursor+ansi.HideCursor)
		defer fmt.Fprint(out, ansi.ShowCursor+ansi.ResetModeAltScreenSaveCursor)
	}
	host, _ := os.Hostname()
	clk := clock.System()
	tick := clk.NewTicker(every)
	defer tick.Stop()
	for {
		head := fmt.Sprintf("Every %s: %s    %s: %s", interval, title, host, clk.Now().Format("Mon Jan 2 15:04:05"))
		if tty {
			width, height, err := term.GetSize(screen.Fd())
			if err != nil {
				width, height = 80, 24
			}
			fmt.Fprint(out, FitScreen(head+"\n\n"+buf.String(), width, height))
		} else {
			fmt.Fprintf(out, "%s\n\n%s\n", head, buf.String())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		}
		buf.Reset()
		if err := frame(&buf); err != nil {
			buf.Reset()
			fmt.Fprintln(&buf, "chronos:", human.Printable(err.Error()))
		}
	}
}

// IsTerminal says whether f is a terminal; writers and readers that are not
// files (a test's buffer) are not.
func IsTerminal(f any) bool {
	fd, ok := f.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(fd.Fd())
}
