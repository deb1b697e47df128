#!/usr/bin/env bash
# Regenerates screenshots/*.png from the real app on the simulated backend:
# tmux runs it, capture-pane -e keeps the colours, freeze renders a PNG.
set -euo pipefail
BIN=$(realpath "${1:-bin/chronos}")
cd "$(dirname "$0")/.."
command -v freeze >/dev/null || GOFLAGS= go install github.com/charmbracelet/freeze@v0.2.2
FREEZE=$(command -v freeze || echo "$(go env GOPATH)/bin/freeze")
WORK=$(mktemp -d)
SOCK=$WORK/tmux.sock
trap 'tmux -S "$SOCK" kill-server 2>/dev/null; rm -rf "$WORK"' EXIT
go run ./scripts/demoledger "$WORK/demo.db"

shot() { # name: capture the pane as it is now
	sleep 1.2
	tmux -S "$SOCK" capture-pane -e -p -t demo > "$WORK/$1.ansi"
	"$FREEZE" --language ansi --theme "github-dark" --window --padding 20 --font.size 14 \
		-o "screenshots/$1.png" "$WORK/$1.ansi" >/dev/null
	echo "screenshots/$1.png"
}
start() { # width height
	tmux -S "$SOCK" kill-server 2>/dev/null && sleep 0.5 || true
	tmux -S "$SOCK" new-session -d -s demo -x "$1" -y "$2" \
		-e CHRONOS_DB="$WORK/demo.db" -e CHRONOS_BACKEND=sim -e TERM=xterm-256color -e COLORTERM=truecolor \
		-e USER=alice "$BIN"
	sleep 2.5 # a few samples for the sparklines
}

start 120 38
shot app
tmux -S "$SOCK" send-keys -t demo Tab
shot processes
tmux -S "$SOCK" send-keys -t demo Tab n
shot booking-form
start 80 24
shot app-80x24
