package vault

// The commit message of a transaction: a readable subject first, the
// events in the body, the Memvault-* trailers last.
//
// People review memory with `git log`, so the subject says what was
// learned or decided. It is chosen, first match wins, from:
//
//  1. the most important content event (subjectRank), with the number of
//     other content events: "decision: retry webhooks 5 times (+4 more)";
//  2. the subject a caller set with Tx.Subject ("refresh: MEMORY.md
//     rendered", "session-summary: how should webhooks retry?");
//  3. the transcripts the commit carries: "transcript: claude-code, 12
//     messages" (how many the session's transcript holds);
//  4. the first event: "session.started: claude-code session (startup)".
//
// Session ids never appear in a subject: they are in the Memvault-Session
// trailer, and a UUID in every subject buries what the commit holds.

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/transcript"
)

// maxSubject is git's customary limit on a subject line, in runes.
const maxSubject = 72

// subjectRank orders the content kinds for the subject, most important
// first: what changes how an agent works next (a decision, a blocker, a
// promise) before what it found out, and what it found out before its
// to-do list. Kinds of a rank are in the order they were recorded. Kinds
// not listed are bookkeeping (transcripts, nodes, heads, sessions) and
// never name a commit while content is in it. Built on first use.
var subjectRank = sync.OnceValue(func() map[string]int {
	ranks := [][]string{
		{"decision", KindDecisionRecorded},
		{"blocker"},
		{"commitment.open", "commitment.close"},
		{"learning", KindLearningRecorded},
		{"next", KindContinuityNext},
		{"done", KindContinuityDone},
		{"constraint"},
		{KindContinuityGoal},
		{"fact", "claim", "reflection"},
		{"retract", "supersede", KindDecisionSuperseed, KindLearningInvalid, KindLearningCorrected,
			KindLearningArchived, KindLearningReinforce, KindLearningMeta},
	}
	m := map[string]int{}
	for i, kinds := range ranks {
		for _, k := range kinds {
			m[k] = i
		}
	}
	return m
})

// message builds the commit message: a readable subject, a body listing the
// events when there are several, and the Memvault-* trailers last. It is
// redacted whole, as every text the vault writes: a subject a caller set
// (an executor's answer) is not an event's text, which Append redacts.
func (tx *Tx) message() string {
	msg, _ := tx.v.Redact(tx.rawMessage())
	return msg
}

func (tx *Tx) rawMessage() string {
	var b strings.Builder
	b.WriteString(tx.commitSubject())
	b.WriteString("\n\n")
	if len(tx.events) > 1 {
		for _, ev := range tx.events {
			fmt.Fprintf(&b, "- %s: %s\n", ev.Kind, Clip(OneLine(ev.Text), 68))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Memvault-Agent: %s\n", tx.opts.Agent)
	if tx.opts.Session != "" {
		fmt.Fprintf(&b, "Memvault-Session: %s\n", tx.opts.Session)
	}
	if tx.opts.Harness != "" {
		fmt.Fprintf(&b, "Memvault-Harness: %s\n", tx.opts.Harness)
	}
	threads := map[string]bool{}
	for _, ev := range tx.events {
		if ev.Thread != "" {
			threads[ev.Thread] = true
		}
	}
	sorted := make([]string, 0, len(threads))
	for t := range threads {
		sorted = append(sorted, t)
	}
	sort.Strings(sorted)
	for _, t := range sorted {
		fmt.Fprintf(&b, "Memvault-Thread: %s\n", t)
	}
	for _, ev := range tx.events {
		fmt.Fprintf(&b, "Memvault-Event: %s\n", ev.ID)
	}
	for _, id := range tx.nodes {
		fmt.Fprintf(&b, "Memvault-Node: %s\n", id)
	}
	return b.String()
}

// commitSubject picks the subject as the file comment describes, at most
// maxSubject runes.
func (tx *Tx) commitSubject() string {
	if s := contentSubject(tx.events); s != "" {
		return s
	}
	if tx.subject != "" {
		return Clip(OneLine(tx.subject), maxSubject)
	}
	if s := tx.transcriptSubject(); s != "" {
		return s
	}
	if len(tx.events) > 0 {
		ev := tx.events[0]
		text := withoutWord(OneLine(ev.Text), ev.Session)
		if text == "" && len(ev.Links) > 0 {
			text = ev.Links[0]
		}
		return Clip(ev.Kind+": "+text, maxSubject)
	}
	return ""
}

// contentSubject names the most important content event of events (see
// subjectRank) and counts the others, or returns "" when there is none.
func contentSubject(events []*Event) string {
	var top *Event
	n := 0
	for _, ev := range events {
		ranks := subjectRank()
		r, ok := ranks[ev.Kind]
		if !ok {
			continue
		}
		n++
		if top == nil || r < ranks[top.Kind] {
			top = ev
		}
	}
	if top == nil {
		return ""
	}
	text := OneLine(top.Text)
	if text == "" && len(top.Links) > 0 {
		text = top.Links[0] // a retraction names only what it retracts
	}
	more := ""
	if n > 1 {
		more = fmt.Sprintf(" (+%d more)", n-1)
	}
	head := top.Kind + ": "
	room := maxSubject - utf8.RuneCountInString(head) - utf8.RuneCountInString(more)
	return head + Clip(text, max(room, 1)) + more
}

// transcriptSubject names the harness and the size of the transcript a
// commit carries without any event worth naming it (the prompt flow's
// lines, committed at a lineage event): "transcript: claude-code, 12
// messages". The count is the session's messages so far, read from the
// transcript's end.
func (tx *Tx) transcriptSubject() string {
	if len(tx.carried) == 0 {
		return ""
	}
	t := tx.carried[0]
	n := 0
	if tail, ok := tx.transcripts[t]; ok {
		n = tail.Last
	} else if tail, err := transcript.EndOf(tx.v.Files(), t); err == nil {
		n = tail.Last
	}
	s := "transcript: "
	if tx.opts.Harness != "" {
		s += tx.opts.Harness + ", "
	}
	s += fmt.Sprintf("%d messages", n)
	if len(tx.carried) > 1 {
		s += fmt.Sprintf(" (+%d more sessions)", len(tx.carried)-1)
	}
	return Clip(s, maxSubject)
}

// Carry notes that the commit carries transcript t, for its subject.
func (tx *Tx) Carry(t transcript.Ref) {
	for _, c := range tx.carried {
		if c == t {
			return
		}
	}
	tx.carried = append(tx.carried, t)
}

// withoutWord drops the words of s that are w, bar punctuation around
// them: a session id in an event's text.
func withoutWord(s, w string) string {
	if w == "" {
		return s
	}
	var out []string
	for _, f := range strings.Fields(s) {
		if strings.Trim(f, "()[]{}<>:,;.'\"") != w {
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}

// OneLine folds a multi-line text for a one-line display.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Clip shortens s to at most n runes, marking the cut with an ellipsis.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
