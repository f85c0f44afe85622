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
	"bytes"
	"cmp"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/waiting"
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
	if tx.carry != nil && len(tx.carry.Events) > 0 {
		b.WriteString("Carried (written earlier without a commit):\n")
		for _, ev := range tx.carry.Events {
			fmt.Fprintf(&b, "- %s: %s\n", ev.Kind, Clip(ev.Text, 68))
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
	if tx.carry != nil {
		for _, ev := range tx.carry.Events {
			fmt.Fprintf(&b, "Memvault-Carried: %s\n", ev.ID)
		}
	}
	return b.String()
}

// commitSubject picks the subject as the file comment describes, at most
// maxSubject runes.
func (tx *Tx) commitSubject() string {
	if s := contentSubject(tx.events); s != "" {
		return s
	}
	if s := tx.carriedSubject(); s != "" {
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

// Deferred commits (TxOptions.Defer). A deferred transaction writes and
// seals as any other, then lists what it wrote in .locks/deferred.json
// (vault/waiting) instead of committing it; the next transaction that
// commits carries the list, naming what it carries in its body
// ("Carried …") and Memvault-Carried trailers, and Flush commits it on its
// own. What a kill can leave: a record that lists files a rolled-back
// transaction did not write (committed as they are, that is unchanged),
// or ledger lines the record does not list, which every commit to their
// segment and every Flush (which holds each segment against HEAD) takes
// in.

// noteWaiting keeps what a deferred transaction leaves for the next
// commit: before its stage (changes nil) the files it is about to write,
// so that a kill after writing them loses no path; after its seal,
// everything it wrote, the events it sealed and the subject it would have
// had. Nothing for a transaction that commits.
func (tx *Tx) noteWaiting(changes []*gitrepo.Change) error {
	if !tx.opts.Defer || tx.opts.NoCommit {
		return nil
	}
	var paths []string
	for _, a := range tx.appends {
		paths = append(paths, a.rel.String())
	}
	for _, f := range tx.files {
		paths = append(paths, f.rel.String())
	}
	for _, rel := range tx.commitPaths {
		paths = append(paths, rel.String())
	}
	r := tx.waiting
	if changes == nil {
		if len(paths) == 0 {
			return nil // events only: their segment is found again (Flush)
		}
		r.AddPaths(paths...)
		return waiting.Save(tx.v.Files(), tx.v.Root, r)
	}
	for _, c := range changes {
		r.AddPaths(c.Path)
	}
	r.AddPaths(paths...)
	for _, ev := range tx.events {
		r.Events = append(r.Events, waiting.Event{ID: ev.ID, Kind: ev.Kind, Text: Clip(withoutWord(OneLine(ev.Text), ev.Session), 120)})
	}
	// The caller's subject (a summary's title) before the chosen one,
	// which names content the carrying commit counts anyway.
	if s := cmp.Or(tx.subject, tx.commitSubject()); s != "" {
		s, _ = tx.v.Redact(Clip(OneLine(s), maxSubject)) // as message redacts a subject
		r.Subjects = append(r.Subjects, s)
	}
	return waiting.Save(tx.v.Files(), tx.v.Root, r)
}

// carryWaiting adds what deferred transactions left to this commit, and
// returns what to do once the commit has landed: the record, and the
// heads' journal records of the writes it carried, removed. A head a
// person changed after a deferred write is not carried: its journal record
// stays, and the next refresh commits the change as theirs
// (heads.CommitHandEdits). A path the record names that is not the
// vault's to commit (git's, the machinery's) is ignored.
func (tx *Tx) carryWaiting() func() {
	r, v := tx.waiting, tx.v
	if r.Empty() {
		return func() {}
	}
	skip := map[string]bool{}
	var journals []string
	for _, head := range v.HeadJournals() {
		w := v.ReadHeadJournal(head)
		switch {
		case w == nil || !slices.ContainsFunc(r.Events, func(ev waiting.Event) bool { return ev.ID == w.Event }):
		case v.headWaits(w, r):
			journals = append(journals, v.HeadJournalPath(head))
		default: // changed since: a person's
			skip[head], skip[RenderedDir+"/"+head] = true, true
		}
	}
	for _, p := range r.Paths {
		first, _, _ := strings.Cut(p, "/")
		ok := p == path.Clean(p) && !path.IsAbs(p) && !strings.Contains(p, "\\") &&
			!slices.Contains(strings.Split(p, "/"), "..") && (first == RenderedDir || !strings.HasPrefix(first, "."))
		if ok && !skip[p] {
			tx.commitPaths = append(tx.commitPaths, RelPath{p})
		}
	}
	tx.carry = r
	return func() {
		waiting.Remove(v.Files(), v.Root)
		for _, p := range journals {
			v.Files().Remove(p)
		}
	}
}

// carriedSubject names the memory a commit carries, when its own events
// name none: a session's end by its summary's title and the memory it
// carries ("session: how should webhooks retry? (1 decision, 1 next)"), a
// compaction by its node's ("compaction: …"), else the most important
// memory event carried. "" when it carries none.
func (tx *Tx) carriedSubject() string {
	if tx.carry == nil {
		return ""
	}
	rank := func(kind string) (int, bool) { r, ok := subjectRank()[kind]; return r, ok }
	counts := waiting.Counts(tx.carry.Events, rank)
	var all []*Event
	for _, ev := range tx.events {
		all = append(all, ev)
	}
	for _, ev := range tx.carry.Events {
		all = append(all, &Event{Kind: ev.Kind, Text: ev.Text})
	}
	head, title := "", ""
	for _, s := range append(slices.Clone(tx.carry.Subjects), tx.subject) {
		for prefix, h := range map[string]string{"session-summary: ": "session: ", "compaction: ": "compaction: "} {
			if t, ok := strings.CutPrefix(s, prefix); ok {
				head, title = h, t // the last lineage node counts: a session's summary after its compactions
			}
		}
	}
	switch {
	case title != "" && counts != "":
		more := " (" + counts + ")"
		return head + Clip(title, max(maxSubject-len(head)-utf8.RuneCountInString(more), 1)) + more
	case title != "":
		return Clip(head+title, maxSubject)
	}
	return contentSubject(all)
}

// Flush commits what deferred transactions left, on its own: the paths
// the record lists and every ledger segment that holds lines HEAD does
// not (a record lost or torn loses no line). Its subject names the memory
// it carries (carriedSubject); a flush that carries only bookkeeping, when
// nothing else will commit it (a session that ends without a summary,
// sync, a person's flush), is named by what it carries: "bookkeeping:
// session.started: claude-code session (startup) (+2 more)". With nothing
// waiting it commits nothing (Result.Commit "").
func (v *Vault) Flush(opts TxOptions) (*Result, error) {
	if opts.Command == "" {
		opts.Command = "flush"
	}
	opts.Defer, opts.NoCommit = false, false
	return v.Update(opts, func(tx *Tx) error {
		tx.flush = true
		blobs, err := v.ledgerBlobs("")
		if err != nil {
			return err
		}
		segs, _, err := ListSegments(v.Root)
		if err != nil {
			return err
		}
		for _, s := range segs {
			data, err := v.Files().ReadFile(v.Abs(s.Rel()))
			if err == nil && bytes.HasSuffix(data, []byte("\n")) && blobs[s.String()] != gitrepo.BlobHash(data) {
				tx.CommitFile(s.Rel()) // a torn last line is the next writer's to repair
				tx.waiting.AddPaths(s.String())
			}
		}
		if subs := tx.waiting.Subjects; len(subs) > 0 {
			s := "bookkeeping: " + subs[0]
			if len(subs) > 1 {
				s += fmt.Sprintf(" (+%d more)", len(subs)-1)
			}
			tx.Subject(s)
		} else if !tx.waiting.Empty() || len(tx.commitPaths) > 0 {
			tx.Subject("bookkeeping: lines written without a commit")
		}
		return nil
	})
}
