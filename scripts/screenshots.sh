#!/usr/bin/env bash
# Regenerates screenshots/*.png from the real app on the simulated backend:
# tmux runs it, capture-pane -e keeps the colours, freeze draws an SVG and
# rsvg-convert makes the PNG (freeze's own PNG output faults in its wasm
# renderer on some machines; its SVG does not). rsvg-convert cannot use
# the font freeze embeds, so the SVG names one installed: DejaVu Sans Mono,
# whose cells are as wide as freeze lays them out.
set -euo pipefail
BIN=$(realpath "${1:-bin/chronos}")
cd "$(dirname "$0")/.."
command -v freeze >/dev/null || GOFLAGS= go install github.com/charmbracelet/freeze@v0.2.2
FREEZE=$(command -v freeze || echo "$(go env GOPATH)/bin/freeze")
if ! command -v rsvg-convert >/dev/null || ! fc-list 2>/dev/null | grep -q "DejaVu Sans Mono"; then
	[ "$(id -u)" = 0 ] || { echo "missing: sudo apt-get install librsvg2-bin fonts-dejavu-core fontconfig" >&2; exit 1; }
	apt-get update -qq && apt-get install -y -qq librsvg2-bin fonts-dejavu-core fontconfig >/dev/null
fi
WORK=$(mktemp -d)
SOCK=$WORK/tmux.sock
trap 'tmux -S "$SOCK" kill-server 2>/dev/null; rm -rf "$WORK"' EXIT
# The line's requests wait while their waiter runs: this sleep, ended on exit.
sleep 900 & WAITER=$!
trap 'kill $WAITER 2>/dev/null; tmux -S "$SOCK" kill-server 2>/dev/null; rm -rf "$WORK"' EXIT
go run ./scripts/demoledger -waiter $WAITER "$WORK/demo.db" # the bookings, an hour of the GPUs' history, a waiting line

# explicit: rewrites each colour change as the whole state in the forms
# freeze draws, for it knows neither "default colour" (SGR 39, 49) nor
# reverse video (SGR 7), which tmux's capture uses (the selected row, the
# SIMULATED badge), and draws backgrounds only as 256 colours (its
# foregrounds of the sixteen take the theme's colours, kept).
explicit() {
	python3 -c '
import re, sys
st = {"bold": False, "rev": False, "fg": None, "bg": None}  # colours: "5;N" or "2;R;G;B"
def sgr(m):
    p = [int(x) if x else 0 for x in m.group(1).split(";")]
    i = 0
    while i < len(p):
        c = p[i]
        if c == 0: st.update(bold=False, rev=False, fg=None, bg=None)
        elif c in (1, 22): st["bold"] = c == 1
        elif c in (7, 27): st["rev"] = c == 7
        elif 30 <= c <= 37 or 90 <= c <= 97: st["fg"] = "5;%d" % (c - 30 if c < 90 else c - 82)
        elif 40 <= c <= 47 or 100 <= c <= 107: st["bg"] = "5;%d" % (c - 40 if c < 100 else c - 92)
        elif c in (38, 48):
            n = 3 if p[i + 1] == 5 else 5
            st["fg" if c == 38 else "bg"] = ";".join(map(str, p[i + 1:i + n]))
            i += n - 1
        elif c in (39, 49): st["fg" if c == 39 else "bg"] = None
        i += 1
    fg, bg = st["fg"], st["bg"]
    if st["rev"]:
        fg, bg = bg or "5;0", fg or "5;7"
    if fg and re.fullmatch(r"5;([0-9]|1[0-5])", fg):  # the theme'"'"'s own sixteen
        n = int(fg[2:])
        fg = str(30 + n if n < 8 else 82 + n)
    elif fg:
        fg = "38;" + fg
    out = "0" + (";1" if st["bold"] else "") + (";" + fg if fg else "") + (";48;" + bg if bg else "")
    return "\x1b[" + out + "m"
sys.stdout.write(re.sub(r"\x1b\[([0-9;]*)m", sgr, sys.stdin.read()))
'
}

shot() { # name: capture the pane as it is now
	sleep 1.2
	tmux -S "$SOCK" capture-pane -e -p -t demo | explicit > "$WORK/$1.ansi"
	"$FREEZE" --language ansi --theme "github-dark" --window --padding 20 --font.size 14 --font.family "DejaVu Sans Mono" \
		-o "$WORK/$1.svg" "$WORK/$1.ansi" >/dev/null
	rsvg-convert --zoom 2 -o "screenshots/$1.png" "$WORK/$1.svg"
	echo "screenshots/$1.png"
}
start() { # width height
	tmux -S "$SOCK" kill-server 2>/dev/null && sleep 0.5 || true
	tmux -S "$SOCK" new-session -d -s demo -x "$1" -y "$2" \
		-e CHRONOS_DB="$WORK/demo.db" -e CHRONOS_BACKEND=sim -e TERM=xterm-256color -e COLORTERM=truecolor \
		-e USER=alice "$BIN"
	sleep 2.5 # a few samples for the sparklines
}
keys() { tmux -S "$SOCK" send-keys -t demo "$@"; }

start 120 38
shot app
keys Tab
shot processes
keys Tab
shot queue
keys n Up 0 Down 5 0 % Enter # GPU 0 is full: the form offers to wait in line
shot booking-form
keys Escape
sleep 0.3 # alone: an escape followed at once by a key reads as alt+key
keys Tab / d a v e Enter # dave's booking, idle all along, on busy GPU 1
sleep 0.3
keys Enter
shot history
start 80 24
shot app-80x24
keys Enter # dave's booking: GPU 1's last hour, at the smallest size that must read well
shot history-80x24
