package hooks

// Scoped injection (issue 34, docs/HOOKS.md "Per scope"): one vault may
// hold several projects, each a thread (project:<name>). A session in
// thread T is shown T's rows, the rows of no thread, and of every other
// thread one index line (its name and state), never its rows' text or
// its nodes. The heads stay whole on disk (MEMORY.md lists every thread,
// CONTINUITY.md is the vault's one working memory); what is filtered is
// the injection, row by row, here.
//
// A row's thread is read from the row where the renderer wrote it
// (MEMORY.md's "(project:beta, `e_…`)", a node line's label), else from
// the protocol's state (vault/continuity) by the row's id or text: that is
// how CONTINUITY.md's numbered next actions, which carry neither, are
// matched. A row that matches nothing (a line a person typed) is kept:
// what a person wrote into a head is part of what a session should see.

import (
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
)

// rowScope is what session start knows of the threads of the rows it may
// show: first what the heads say of their own rows (a thread head's rows
// are its thread's, MEMORY.md's carry their thread), then, only for a row
// they leave unknown, the protocol's state.
type rowScope struct {
	thread string            // the session's thread, "" for none
	byID   map[string]string // event id → thread ("" for none)
	byKey  map[string]string // a row's folded text → its thread
	keys   []string          // byKey's keys, for clipped lines ("…")
	// protocol reads the protocol's state into byID and byKey, once; nil
	// once read.
	protocol func(*rowScope)
}

// otherThreads reports whether a start context's MEMORY.md names a thread
// other than thread: a thread line (MEMORY.md lists every thread with rows
// that hold), a row's reference, a node's label. When it does not, the
// vault holds that thread's rows and global rows only, and nothing needs
// filtering: a vault of one project pays nothing for scoping.
func otherThreads(mem block, thread string) bool {
	for _, s := range mem.sections {
		for _, r := range s.rows {
			if r.more && sectionName(s.heading) == "threads" {
				return true
			}
			for _, t := range lineThreads(r) {
				if t != thread && t != "" {
					return true
				}
			}
		}
	}
	return false
}

// newRowScope is the scope of a session in thread, knowing the heads'
// rows: the thread head's and MEMORY.md's.
func (r *Runner) newRowScope(thread string, head, mem block) *rowScope {
	sc := &rowScope{thread: thread, byID: map[string]string{}, byKey: map[string]string{}, protocol: r.protocolThreads}
	for _, s := range head.sections {
		for _, row := range s.rows {
			if !row.note && thread != "" {
				sc.learn(row.ids, row.key, thread)
			}
		}
	}
	// MEMORY.md names the thread of a row in its reference, and writes a
	// row of no thread with its id alone: "(`e_…`)".
	for _, s := range mem.sections {
		for _, row := range s.rows {
			switch ts := lineThreads(row); {
			case row.note || row.thread != "":
			case len(ts) == 1:
				sc.learn(row.ids, row.key, ts[0])
			case ts == nil && len(row.ids) == 1 && strings.HasSuffix(strings.TrimSpace(row.text), "(`"+row.ids[0]+"`)"):
				sc.learn(row.ids, row.key, "")
			}
		}
	}
	return sc
}

// learn records that the row of ids and text key is thread's.
func (sc *rowScope) learn(ids []string, key, thread string) {
	for _, id := range ids {
		sc.byID[id] = thread
	}
	if key == "" {
		return
	}
	switch old, ok := sc.byKey[key]; {
	case !ok:
		sc.byKey[key] = thread
		sc.keys = append(sc.keys, key)
	case old != thread:
		// Two threads with one text: a line of it cannot tell which it
		// is, and is left out (the session's own row is in its head).
		sc.byKey[key] = ambiguous
	}
}

// protocolThreads reads the threads of the protocol's open items (next
// actions, commitments, blockers: what CONTINUITY.md's live sections list,
// the next actions without an id) and of its decisions and learnings.
// Without the state (a vault whose state does not load) a row of unknown
// thread is kept, as before scoping; the hook log says why.
func (r *Runner) protocolThreads(sc *rowScope) {
	c, err := continuity.LoadContinuity(r.V)
	if err != nil {
		if !r.refused(err) {
			logf(r.V, "%s session-start: threads of the working memory: %v", r.Harness.Name, err)
		}
		return
	}
	for _, l := range [][]continuity.Item{c.Next, c.Commitments, c.Blockers} {
		for _, it := range l {
			sc.learn([]string{it.ID}, foldKey(it.Text), it.Thread)
		}
	}
	for _, d := range c.Decisions {
		sc.byID[d.Event] = d.Thread
	}
	for _, l := range c.Learnings {
		sc.byID[l.Event] = l.Thread
	}
}

// ambiguous is the thread of a text two threads' items share.
const ambiguous = "\x00two threads"

// threadsOf returns the threads a row belongs to and whether they are
// known: from the row itself, else by its id, else by its text, from the
// heads and, when they do not know it, from the protocol's state.
func (sc *rowScope) threadsOf(r row) ([]string, bool) {
	if ts := lineThreads(r); ts != nil {
		return ts, true
	}
	ts, ok := sc.known(r)
	if !ok && sc.readProtocol() {
		ts, ok = sc.known(r)
	}
	return ts, ok
}

// readProtocol reads the protocol's state into sc, the first time only;
// it reports whether it read it now.
func (sc *rowScope) readProtocol() bool {
	if sc.protocol == nil {
		return false
	}
	read := sc.protocol
	sc.protocol = nil
	read(sc)
	return true
}

// known is threadsOf from what sc holds so far.
func (sc *rowScope) known(r row) ([]string, bool) {
	for _, id := range r.ids {
		if t, ok := sc.byID[id]; ok {
			return []string{t}, true
		}
	}
	if r.key == "" {
		return nil, false
	}
	if t, ok := sc.byKey[r.key]; ok {
		return []string{t}, true
	}
	// A line clipped with "…" matches the one item it starts.
	if stem, ok := strings.CutSuffix(r.key, "…"); ok && len(stem) >= 20 {
		found, n := "", 0
		for _, k := range sc.keys {
			if strings.HasPrefix(k, stem) {
				found, n = sc.byKey[k], n+1
			}
		}
		if n == 1 {
			return []string{found}, true
		}
	}
	return nil, false
}

// inScope reports whether a row of threads is shown to the session: one
// of no thread, of the session's thread, or one that names in its text an
// event of the session's thread (an explicit link: an id the thread head
// shows, headIDs, or that the heads or the protocol know as the thread's).
func (sc *rowScope) inScope(r row, ts []string, headIDs map[string]bool) bool {
	for _, t := range ts {
		if t == "" || t == sc.thread {
			return true
		}
	}
	if sc.thread == "" {
		return false
	}
	for _, id := range namedIDs(r.text) {
		if containsID(r.ids, id) {
			continue
		}
		if headIDs[id] || sc.eventThread(id) == sc.thread {
			return true
		}
	}
	return false
}

// eventThread is the thread of an event id as the heads or, when they do
// not know it, the protocol know it; ambiguous when neither does.
func (sc *rowScope) eventThread(id string) string {
	if t, ok := sc.byID[id]; ok {
		return t
	}
	if sc.readProtocol() {
		if t, ok := sc.byID[id]; ok {
			return t
		}
	}
	return ambiguous
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// namedIDs are the event ids (e_…) a line names anywhere in it.
func namedIDs(text string) []string {
	var out []string
	for i := strings.Index(text, "e_"); i >= 0; {
		j := i + 2
		for j < len(text) && (text[j] >= '0' && text[j] <= '9' || text[j] >= 'a' && text[j] <= 'z') {
			j++
		}
		if (i == 0 || !isWordByte(text[i-1])) && isID(text[i:j]) {
			out = append(out, text[i:j])
		}
		next := strings.Index(text[j:], "e_")
		if next < 0 {
			break
		}
		i = j + next
	}
	return out
}

func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// lineThreads reads the threads a rendered line names of itself: a
// MEMORY.md thread line's key, a row's closing "(THREAD, `e_…`)", a node
// line's label "`n_…` KIND, THREAD…, DATE: title". nil when it names none
// (a row of no thread says "(`e_…`)" and is found by its id instead).
func lineThreads(r row) []string {
	if r.thread != "" {
		return []string{r.thread}
	}
	t := strings.TrimSpace(r.text)
	if strings.HasSuffix(t, "`)") {
		if open := strings.LastIndex(t, "("); open >= 0 {
			ref := t[open+1:]
			if head, _, ok := strings.Cut(ref, ", `"); ok && isThreadKey(head) {
				return []string{head}
			}
		}
	}
	rest := trimListMarker(t)
	if strings.HasPrefix(rest, "`n_") {
		end := strings.Index(rest[1:], "`")
		if end < 0 {
			return nil
		}
		label, _, _ := strings.Cut(rest[end+2:], ": ")
		var ts []string
		for _, part := range strings.Split(label, ", ") {
			if p := strings.TrimSpace(part); isThreadKey(p) {
				ts = append(ts, p)
			}
		}
		if ts == nil {
			return []string{""} // a node of no thread
		}
		return ts
	}
	return nil
}

// isThreadKey reports a thread key as the renderers write it: kind:slug.
func isThreadKey(s string) bool {
	if !strings.Contains(s, ":") || strings.ContainsAny(s, " `") {
		return false
	}
	th, err := vault.ParseThread(s)
	return err == nil && th.String() == s
}

// scopeBlocks filters the start context's pieces for the session's
// thread: CONTINUITY.md's live sections (cont) and MEMORY.md (mem). The
// thread head, all of it the thread's, is not filtered; its ids are the
// thread's events an explicit link may name. It returns the pieces
// filtered, and the index of the other threads: their MEMORY.md lines
// without their "; next: …", at most one per thread, for the end of the
// context (cut before any row of the thread).
func (sc *rowScope) scopeBlocks(head, cont, mem block) (block, block, block) {
	headIDs := map[string]bool{}
	for _, s := range head.sections {
		for _, r := range s.rows {
			for _, id := range r.ids {
				headIDs[id] = true
			}
		}
	}
	keep := func(r row) bool {
		if r.note {
			return true
		}
		ts, known := sc.threadsOf(r)
		return !known || sc.inScope(r, ts, headIDs)
	}
	index := block{title: "# Other threads (one line each; `memvault context --thread KEY` shows one)"}
	var idx section
	seen := map[string]bool{}
	outMem := block{title: mem.title, ids: mem.ids}
	for _, s := range mem.sections {
		ns := section{heading: s.heading}
		for _, r := range s.rows {
			switch {
			case r.thread != "" && r.thread != sc.thread:
				if !seen[r.thread] {
					seen[r.thread] = true
					idx.rows = append(idx.rows, indexRow(r))
				}
			case r.more && sectionName(s.heading) == "threads":
				idx.rows = append(idx.rows, r)
			case keep(r):
				ns.rows = append(ns.rows, r)
			}
		}
		outMem.sections = append(outMem.sections, ns)
	}
	index.sections = []section{idx}
	return sc.scopeContinuity(cont, keep), outMem, index
}

// indexRow is another thread's MEMORY.md line as the index shows it: its
// name and state, without the text of its first next action.
func indexRow(r row) row {
	t := strings.TrimSpace(r.text)
	if m := matchThreadLine(t); m != nil && m[6] >= 0 {
		t = t[:m[6]] + t[m[7]:]
	}
	return row{text: t, key: rowKey(t), ids: r.ids, thread: r.thread}
}

// scopeContinuity keeps CONTINUITY.md's live rows in scope. Next actions
// keep their numbers (`DONE: 3` names the vault's third). The Current
// Task, the vault's first next action, is replaced when it is another
// thread's by the first next action of the session's thread or of no
// thread (one the protocol knows: a line a person typed is shown where it
// is, not promoted); with none, it is left out.
func (sc *rowScope) scopeContinuity(cont block, keep func(row) bool) block {
	out := block{title: cont.title, ids: cont.ids}
	var firstNext *row
	for _, s := range cont.sections {
		if sectionName(s.heading) != "next actions" {
			continue
		}
		for _, r := range s.rows {
			if ts, known := sc.threadsOf(r); known && !r.note && keep(r) && ts[0] != ambiguous {
				firstNext = &r
				break
			}
		}
	}
	for _, s := range cont.sections {
		ns := section{heading: s.heading}
		task := sectionName(s.heading) == "current task"
		for _, r := range s.rows {
			switch {
			case keep(r):
				ns.rows = append(ns.rows, r)
			case task && firstNext != nil:
				text := "- " + trimListMarker(strings.TrimSpace(firstNext.text))
				ns.rows = append(ns.rows, row{text: text, key: firstNext.key, ids: firstNext.ids})
			}
		}
		out.sections = append(out.sections, ns)
	}
	return out
}
