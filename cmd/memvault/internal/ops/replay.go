package ops

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memvault/memvault/vault"
)

// DefaultReplayLast is how many events `memvault replay` shows when --last
// is not given.
const DefaultReplayLast = 20

// ReplayTextWidth is the widest the text column of the replay table gets,
// in terminal cells: longer text is cut and ends in "…". The table is the
// same wherever it is printed (a terminal, a pipe, a test), so the same
// ledger gives the same bytes; --json carries the whole text.
const ReplayTextWidth = 72

// ReplayQuery selects the events `memvault replay` shows: those of Thread
// (all when empty) and of Kind (all when empty; a supersede counts as the
// kind it replaces, as in `memvault ledger`), the last Last of them (0:
// all). Memory first: without All (--all) and without a Kind, memvault's
// bookkeeping (IsBookkeeping) is left out.
type ReplayQuery struct {
	Last   int
	Thread string
	Kind   string
	All    bool
}

// bookkeeping are the kinds memvault writes about its own work rather
// than what was remembered: a session started or ended, the threads it
// belongs to, an import of a transcript, a head rendered, deferred or
// taken over, the protocol's audit and rotation, two lines of history
// joined. A hand edit of a head, a conflict, a node (a session's summary),
// a policy violation and every memory row are not.
var bookkeeping = map[string]bool{
	vault.KindSessionStarted: true, vault.KindSessionThread: true, vault.KindContinuitySession: true,
	vault.KindContinuityAudited: true, vault.KindContinuityRotated: true, vault.KindTranscriptImported: true,
	vault.KindTranscriptRedacted: true, "transcript.sealed": true, vault.KindHeadRendered: true,
	vault.KindHeadDeferred: true, vault.KindHeadTakeover: true, vault.KindJoin: true,
}

// IsBookkeeping reports whether kind is bookkeeping, which the replay and
// the web timeline show only when asked (--all, the timeline's
// "bookkeeping" toggle).
func IsBookkeeping(kind string) bool { return bookkeeping[kind] }

// ReplayEvent is one event of the replay, as --json prints it: the
// columns of the table, whole, and what the table leaves out.
type ReplayEvent struct {
	TS      string   `json:"ts"`
	ID      string   `json:"id"`
	Kind    string   `json:"kind"`
	Source  string   `json:"source"`
	Thread  string   `json:"thread"`
	Agent   string   `json:"agent"`
	Session string   `json:"session,omitempty"`
	Text    string   `json:"text"`
	Links   []string `json:"links,omitempty"`
	Status  string   `json:"status"`
	Hash    string   `json:"hash"`
}

// Replay returns the last events q selects, oldest first, how many
// matched, and how many bookkeeping events it left out. It is a pure
// function of the folded ledger: the same ledger gives the same events, in
// a clone too.
func Replay(st *vault.State, q ReplayQuery) (events []ReplayEvent, matched, hidden int, err error) {
	rows, _, err := Ledger(st, LedgerQuery{Filter: vault.Filter{Kind: q.Kind, Thread: q.Thread}})
	if err != nil {
		return nil, 0, 0, err
	}
	if !q.All && q.Kind == "" {
		n := len(rows)
		rows = slices.DeleteFunc(rows, func(r *vault.Row) bool { return IsBookkeeping(r.Kind) })
		hidden = n - len(rows)
	}
	matched = len(rows)
	if q.Last > 0 && len(rows) > q.Last {
		rows = rows[len(rows)-q.Last:]
	}
	events = make([]ReplayEvent, 0, len(rows))
	for _, r := range rows {
		events = append(events, ReplayEvent{TS: r.TS, ID: r.ID, Kind: r.Kind, Source: r.Source,
			Thread: r.Thread, Agent: r.Agent, Session: r.Session, Text: r.Text, Links: r.Links,
			Status: r.Status, Hash: r.Hash})
	}
	return events, matched, hidden, nil
}

// ReplayTable lays events out as an aligned table: a header, then one
// line per event (time, id, kind, source, thread, text). Every cell is one
// line: control characters (newlines, tabs, terminal escapes) and the
// characters that reorder text are written as escapes (\n, \t, \x1b,
// \u202e), and the text is cut to ReplayTextWidth cells. An absent source
// or thread is "-".
func ReplayTable(events []ReplayEvent) string {
	header := []string{"TIME", "ID", "KIND", "SOURCE", "THREAD", "TEXT"}
	rows := [][]string{header}
	for _, e := range events {
		rows = append(rows, []string{OneLine(e.TS), OneLine(e.ID), OneLine(e.Kind),
			orDash(OneLine(e.Source)), orDash(OneLine(e.Thread)), Clip(OneLine(e.Text), ReplayTextWidth)})
	}
	widths := make([]int, len(header))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], CellWidth(cell))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, cell := range r {
			b.WriteString(cell)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-CellWidth(cell)+2))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// OneLine writes s on one line a terminal shows as it is: a newline, a
// carriage return and a tab become \n, \r and \t; any other control
// character (an ANSI escape's ESC included), the characters that reorder
// text (bidirectional overrides and isolates) and the line and paragraph
// separators become \xNN or \uNNNN; a backslash stays a backslash. Invalid
// UTF-8 bytes become \xNN too.
func OneLine(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || reorders(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || reorders(r) {
			return true
		}
	}
	return false
}

// reorders reports the characters that change the order or the lines a
// terminal shows text in: the bidirectional embeddings, overrides and
// isolates, the marks, and the line and paragraph separators.
func reorders(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 ||
		r == 0x200e || r == 0x200f || r == 0x061c || r == 0x2028 || r == 0x2029
}

// Clip cuts s to at most n terminal cells, ending it in "…" when it cut.
func Clip(s string, n int) string {
	if CellWidth(s) <= n {
		return s
	}
	var b strings.Builder
	w := 0
	for _, r := range s {
		rw := runeWidth(r)
		if w+rw > n-1 {
			break
		}
		b.WriteRune(r)
		w += rw
	}
	return b.String() + "…"
}

// CellWidth is how many terminal cells s takes: two for a wide rune (CJK,
// Hangul, full-width forms, most emoji), none for a combining mark, one
// for the rest.
func CellWidth(s string) int {
	w := 0
	for _, r := range s {
		w += runeWidth(r)
	}
	return w
}

func runeWidth(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || r == 0x200b || r == 0x200d:
		return 0
	case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0xa4cf && r != 0x303f,
		r >= 0xac00 && r <= 0xd7a3, r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f,
		r >= 0xff00 && r <= 0xff60, r >= 0xffe0 && r <= 0xffe6,
		r >= 0x1f300 && r <= 0x1f64f, r >= 0x1f900 && r <= 0x1f9ff,
		r >= 0x20000 && r <= 0x3fffd:
		return 2
	}
	return 1
}
