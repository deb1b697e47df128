package monitor

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
)

// ActLogger writes one line per monitor act to w through log/slog: "text"
// (key=value) or "json", both with the fields scripts read — time, kind,
// partition, user, uid, pid, detail, as monitor.Act's JSON has them — and a level (ERROR for errors, WARN for
// signals refused, INFO otherwise). time is when the act happened.
func ActLogger(w io.Writer, format string) (func(Act), error) {
	opts := &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.MessageKey {
			a.Key = "detail"
		}
		return a
	}}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format %s: use text or json", human.Quote(format))
	}
	return func(a Act) {
		level := slog.LevelInfo
		switch a.Kind {
		case domain.EventError:
			level = slog.LevelError
		case domain.EventDenied, domain.EventClock:
			level = slog.LevelWarn
		}
		r := slog.NewRecord(a.Time, level, a.Detail, 0)
		r.AddAttrs(slog.String("kind", string(a.Kind)))
		if a.Partition != 0 {
			// partition is booking's old name, kept for old scripts.
			r.AddAttrs(slog.Uint64("booking", a.Partition), slog.Uint64("partition", a.Partition))
		}
		if a.User != "" {
			r.AddAttrs(slog.String("user", a.User))
		}
		if a.UID != 0 {
			r.AddAttrs(slog.Int("uid", a.UID))
		}
		if a.PID != 0 {
			r.AddAttrs(slog.Int("pid", a.PID))
		}
		// A log that cannot be written (a closed stderr) must not stop
		// the monitor; the ledger holds every act anyway.
		_ = h.Handle(context.Background(), r)
	}, nil
}
