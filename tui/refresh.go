package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/chronos-gpu/chronos/core"
	"github.com/chronos-gpu/chronos/core/admission"
	"github.com/chronos-gpu/chronos/core/domain"
	"github.com/chronos-gpu/chronos/core/human"
	"github.com/chronos-gpu/chronos/core/notice"
	"github.com/chronos-gpu/chronos/core/view"
	"github.com/chronos-gpu/chronos/tui/history"
	"github.com/chronos-gpu/chronos/tui/tabs"
	"github.com/chronos-gpu/chronos/tui/widget"
)

// schedule is when the app last read what, and what it waits for.
type schedule struct {
	sampledAt  time.Time // when the GPUs were last asked for a reading
	loadedAt   time.Time // when the ledger was last asked for
	nextChange time.Time // the next instant a shown booking ends or leaves the table
	// changeHeld: a read for a change notice went out less than its
	// spacing ago; changeAgain: another notice came meanwhile.
	changeHeld, changeAgain bool
	readTook                time.Duration // how long the last read of the ledger took
}

// due reports whether a read last made at last is due again at now, every
// so many ticks of every. Ticks jitter, so it is due half a tick early
// rather than a whole tick late.
func due(now, last time.Time, ticks int, every time.Duration) bool {
	return last.IsZero() || now.Sub(last) >= time.Duration(ticks)*every-every/2
}

// passed reports whether the instant t (zero: none) has come.
func passed(now, t time.Time) bool { return !t.IsZero() && !now.Before(t) }

// historyEvery is the least time between two reads of an open history
// with the ledger: monitors add a minute once a minute, and the readings
// they store every few seconds change nothing in it.
const historyEvery = 15 * time.Second

// load asks for the ledger and notes when; an open history is read again
// with it, now and then.
func (m *Model) load() tea.Cmd {
	now := m.sh.Now()
	m.sched.loadedAt = now
	load := loadCmd(m.opts.Client, m.current() == m.queue && m.mode != viewingHistory, m.noticesRead)
	if h := m.history; h != nil && now.Sub(h.ReadAt) >= historyEvery {
		h.ReadAt = now
		return tea.Batch(load, historyCmd(m.opts.Client, h.Device))
	}
	return load
}

func (m *Model) tickCmd() tea.Cmd {
	return m.sh.After(m.opts.Refresh, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// receive takes in readings, change notices, the monitor's acts and the
// answers to the person's requests.
//
//nolint:funlen,gocyclo // one case per message the app receives, as bubbletea's Update is
func (m *Model) receive(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tickMsg:
		// Countdowns come from the clock in View; a tick only decides what
		// needs reading again.
		now := m.sh.Now()
		cmds := []tea.Cmd{m.tickCmd()}
		if due(now, m.sched.sampledAt, gpuEvery, m.opts.Refresh) {
			m.sched.sampledAt = now
			cmds = append(cmds, sampleCmd(m.opts.Backend), hostsCmd(m.opts.Client))
		}
		if passed(now, m.sched.nextChange) || due(now, m.sched.loadedAt, reloadEvery, m.opts.Refresh) {
			cmds = append(cmds, m.load())
		}
		return tea.Batch(cmds...)

	case sampleMsg:
		if msg.err != nil {
			return m.status.set(m.sh, fmt.Sprintf("reading the GPUs: %v", msg.err), true)
		}
		if m.sched.sampledAt.IsZero() { // Init's reading
			m.sched.sampledAt = m.sh.Now()
		}
		m.data.Sample = msg.sample
		m.gpus.Record(msg.sample)
		m.derive()
		return nil

	case hostsMsg:
		if msg.err != nil {
			return m.status.set(m.sh, fmt.Sprintf("reading the other hosts: %v", msg.err), true)
		}
		m.data.Hosts, m.data.Warnings = msg.hosts, core.SkewWarnings(m.opts.Client.Host(), msg.hosts)
		m.derive()
		return nil

	case ledgerMsg:
		if msg.err != nil {
			return m.status.set(m.sh, msg.err.Error(), true)
		}
		if m.sched.loadedAt.IsZero() { // Init's reading
			m.sched.loadedAt = m.sh.Now()
		}
		m.sched.readTook = msg.took
		m.data.Parts, m.data.Avail, m.data.Policy = msg.parts, msg.avail, msg.policy
		m.data.Queue, m.data.QueueRead = msg.queue, msg.withQueue
		if msg.noticesUpTo > m.noticesRead {
			m.noticesRead = msg.noticesUpTo
			for _, n := range msg.notices {
				m.notice(n)
			}
		}
		said := m.noticeGrants(msg.parts)
		m.derive()
		return said

	case watchingMsg:
		m.changes = msg.changes
		return waitChangeCmd(m.changes)

	case ledgerChangedMsg:
		// Under a stream of writes (a busy lab, a soak) notices come faster
		// than re-reading helps: read at once, then at most once per
		// spacing while they keep coming (see changeSpacingAfter).
		if m.sched.changeHeld {
			m.sched.changeAgain = true
			return waitChangeCmd(m.changes)
		}
		m.sched.changeHeld = true
		return tea.Batch(m.load(), waitChangeCmd(m.changes), m.spacingCmd())

	case changeSpacingMsg:
		m.sched.changeHeld = false
		if !m.sched.changeAgain {
			return nil
		}
		m.sched.changeAgain, m.sched.changeHeld = false, true
		return tea.Batch(m.load(), m.spacingCmd())

	case actMsg:
		return tea.Batch(m.status.set(m.sh, string(msg), false), waitActCmd(m.opts.Acts), m.load())

	case backgroundMsg:
		if msg.err != nil {
			return m.status.set(m.sh, "keeping the line in the background: "+msg.err.Error(), true)
		}
		var said []string
		for _, w := range msg.waiters {
			delete(m.placed, w.request)
			said = append(said, fmt.Sprintf("Request #%d keeps waiting in the background: pid %d, log %s", w.request, w.pid, w.log))
		}
		m.farewell = strings.Join(said, "\n") + "\n(chronos queue shows where it stands; chronos queue cancel ID takes it out)"
		return m.quit()

	case dismissedMsg:
		if msg.err != nil {
			return m.status.set(m.sh, fmt.Sprintf("dismissing the notice: %v", msg.err), true)
		}
		return nil

	case history.Msg:
		if m.history != nil {
			m.history.Show(msg)
		}
		return nil

	case createdMsg:
		if msg.err != nil {
			if m.mode == booking {
				m.form.Failed(msg.err) // the form says it, and when it would fit
				return nil
			}
			return m.status.set(m.sh, msg.err.Error(), true)
		}
		p := *msg.part
		m.data.Parts = append(slices.DeleteFunc(m.data.Parts, func(q core.Partition) bool { return q.ID == p.ID }), p)
		if m.mode == booking {
			m.mode, m.form = browsing, nil
		}
		m.show(m.bookings)
		m.derive()
		m.bookings.Table.SelectID(p.ID)
		return tea.Batch(m.status.set(m.sh, fmt.Sprintf("Booked #%d: %s (%s) of GPU %s for %s", p.ID, human.FormatPercent(p.SharePPM),
			human.FormatBytes(p.Bytes), human.Printable(m.opts.Client.GPUName(p.Host, p.Device)), human.FormatDuration(p.Expires.Sub(p.Start))), false), m.load())

	case queuedMsg:
		if msg.part != nil { // room came meanwhile: booked
			return m.receive(createdMsg{part: msg.part})
		}
		if msg.err != nil {
			return m.receive(createdMsg{err: msg.err})
		}
		e := *msg.entry
		if m.placed == nil {
			m.placed = map[uint64]bool{}
		}
		m.placed[e.ID] = true
		if m.mode == booking {
			m.mode, m.form = browsing, nil
		}
		m.show(m.queue)
		m.data.Queue, m.data.QueueRead = append(slices.DeleteFunc(m.data.Queue, func(q admission.QueueEntry) bool { return q.ID == e.ID }), e), true
		m.derive()
		m.queue.Table.SelectID(e.ID)
		return tea.Batch(m.status.set(m.sh, fmt.Sprintf("Request #%d waits at position %d; should start at %s (%s)", e.ID, e.Position,
			human.FormatTime(e.ETA, m.sh.Now()), human.Printable(e.Reason)), false), m.load())

	case leftLineMsg:
		if msg.err != nil {
			return m.status.set(m.sh, msg.err.Error(), true)
		}
		delete(m.placed, msg.id)
		return tea.Batch(m.status.set(m.sh, fmt.Sprintf("Request #%d left the line", msg.id), false), m.load())

	case releasedMsg:
		if msg.err != nil {
			return m.status.set(m.sh, msg.err.Error(), true)
		}
		m.replace(msg.part)
		m.answered(msg.part.ID)
		return tea.Batch(m.status.set(m.sh, fmt.Sprintf("Released #%d", msg.part.ID), false), m.load())

	case extendedMsg:
		if msg.err != nil {
			return m.status.set(m.sh, msg.err.Error(), true)
		}
		m.replace(msg.part)
		m.answered(msg.part.ID)
		return tea.Batch(m.status.set(m.sh, fmt.Sprintf("Extended #%d by %s: %s left", msg.part.ID, human.FormatDuration(msg.by),
			view.TimeLeft(msg.part.Expires.Sub(m.sh.Now()))), false), m.load())
	}
	return nil
}

func (m *Model) spacingCmd() tea.Cmd {
	return m.sh.After(changeSpacingAfter(m.sched.readTook), func(time.Time) tea.Msg { return changeSpacingMsg{} })
}

// notice puts a notice on the notice line: the person's own only, and a
// booking's newer notice in place of its older one (a read that raced
// another may bring an older one again: it is not shown).
func (m *Model) notice(n notice.Notice) {
	if n.UID != m.sh.Me.UID {
		return
	}
	for _, old := range m.notices {
		if old.Partition == n.Partition && n.Seq > 0 && old.Seq >= n.Seq {
			return
		}
	}
	m.answered(n.Partition)
	m.notices = append(m.notices, n)
}

// dropMootNotices takes off the notice line what no longer needs saying:
// a notice dismissed in any app of the person's, or one about a booking
// that ended (or left the table) since.
func (m *Model) dropMootNotices(now time.Time) {
	if len(m.notices) == 0 || m.sched.loadedAt.IsZero() {
		return
	}
	parts := make(map[uint64]domain.Partition, len(m.data.Parts))
	for _, p := range m.data.Parts {
		parts[p.ID] = p.Partition
	}
	m.notices = slices.DeleteFunc(m.notices, func(n notice.Notice) bool {
		p, ok := parts[n.Partition]
		return !ok || n.Moot(p, now)
	})
}

// dismiss takes the shown notice off the line here at once, and records
// in the ledger that the person read it, for their other apps.
func (m *Model) dismiss() tea.Cmd {
	n := m.notices[len(m.notices)-1]
	m.notices = m.notices[:len(m.notices)-1]
	if n.Seq == 0 {
		return nil // the app's own news, told only here
	}
	return dismissCmd(m.writes(), n)
}

// noticeGrants tells of the app's own requests booked since the last
// reading: the person asked the app to wait for them and may be looking
// elsewhere, so it goes on the notice line, which stays until dismissed,
// as `create --wait` prints the booking it waited for. The status line,
// which said where the request waited, says it was booked.
func (m *Model) noticeGrants(parts []core.Partition) tea.Cmd {
	var said tea.Cmd
	for _, p := range parts {
		if p.Request == 0 || !m.placed[p.Request] {
			continue
		}
		delete(m.placed, p.Request)
		m.notice(notice.Notice{Time: p.Created, Kind: domain.EventCreated, Partition: p.ID, Device: p.Device, UID: p.UID, User: p.User,
			Detail: fmt.Sprintf("booked from request #%d, %s of GPU %s until %s", p.Request, human.FormatPercent(p.SharePPM),
				m.opts.Client.GPUName(p.Host, p.Device), human.FormatTime(p.Expires, m.sh.Now()))})
		said = m.status.set(m.sh, fmt.Sprintf("Request #%d is booked: #%d", p.Request, p.ID), false)
	}
	return said
}

// answered drops a booking's notice: a newer one came, or the person acted
// on the booking (released or extended it).
func (m *Model) answered(id uint64) {
	m.notices = slices.DeleteFunc(m.notices, func(n notice.Notice) bool { return n.Partition == id })
}

// replace puts a changed booking in place of its old copy.
func (m *Model) replace(p core.Partition) {
	for i := range m.data.Parts {
		if m.data.Parts[i].ID == p.ID {
			m.data.Parts[i] = p
		}
	}
	m.derive()
}

// rawPartitions are the stored records of bookings.
func rawPartitions(parts []core.Partition) []domain.Partition {
	raw := make([]domain.Partition, len(parts))
	for i, p := range parts {
		raw[i] = p.Partition
	}
	return raw
}

// nextChange is the first instant after after at which a booking starts
// (one booked ahead), ends, or an ended one leaves the table: the ledger is read again then, even if a
// sample re-derives the rows first.
func nextChange(parts []core.Partition, after time.Time) time.Time {
	var next time.Time
	for _, p := range parts {
		t := p.Expires
		switch {
		case p.Upcoming(after):
			t = p.Start
		case !p.LiveAt(after):
			t = endedAt(p.Partition).Add(tabs.ShownAfterEnd)
		}
		if t.After(after) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// How long a status message stays.
const (
	statusFor      = 5 * time.Second
	errorStatusFor = 10 * time.Second
)

// statusLine is the transient message under the tables; each clears itself
// after a while unless a newer one replaced it.
type statusLine struct {
	text  string
	isErr bool
	seq   int
}

// set shows text and returns the command that clears it.
func (s *statusLine) set(sh *widget.Shared, text string, isErr bool) tea.Cmd {
	if text == s.text && isErr == s.isErr {
		return nil // the same error every second would never clear
	}
	s.seq++
	s.text, s.isErr = text, isErr
	after := statusFor
	if isErr {
		after = errorStatusFor
	}
	seq := s.seq
	return sh.After(after, func(time.Time) tea.Msg { return clearStatusMsg{seq: seq} })
}

func (s *statusLine) clear(seq int) {
	if seq == s.seq {
		s.text, s.isErr = "", false
	}
}

// endedAt is when a booking stopped holding its share.
func endedAt(p domain.Partition) time.Time { return p.End() }
