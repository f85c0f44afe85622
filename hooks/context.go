package hooks

// What session start injects: the usage note, the session's thread head,
// the live part of CONTINUITY.md, MEMORY.md and the learnings and
// decisions in scope, each row once, fitted to the harness's budget.
// The pieces are read as they are on disk (hand edits included) and parsed
// here into rows (context_rows.go), deduplicated, and cut from the end.

import (
	"fmt"
	"strings"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/vault"
)

// UsageNote is the first thing a session starts with: how to reach memory,
// and the control lines distillation parses out of replies (vault/lineage/distill.go),
// taught in exactly the forms it accepts. Session start and `memvault
// context` inject it; `memvault context --help` shows it.
const UsageNote = "memvault: this project has a memory (.memory/). Search it with `memvault recall QUERY`; " +
	"drill into a node id (n_…) with `memvault expand ID`.\n" +
	"Record as you work, one line each in your replies, outside code blocks:\n" +
	"DECISION: what was decided (optional: DECISION: what | why)\n" +
	"LEARNED: what you learned (optional: LEARNED: [scope] what went wrong | cause | how to prevent it)\n" +
	"NEXT: the next action\n" +
	"DONE: text, id or number of a next action, blocker or commitment (closes it)\n" +
	"BLOCKER: what blocks progress\n" +
	"COMMIT: a promise you make; CLOSE: <id> closes one\n" +
	"CLAIM: commitment.closed={\"id\":\"e_…\"} (memvault checks it)\n" +
	"REFLECT: {\"text\":\"what you noticed\"}\n" +
	"THREAD: kind:slug (sets the thread for the lines after it)"

// DefaultContextLimit is the budget, in characters, of a harness that
// states no limit of its own, and of `memvault context`: about 2,000
// tokens, below the smallest limit a harness was measured to enforce
// (docs/HOOKS.md, "Context budgets").
const DefaultContextLimit = 8000

// StartContext is what a session of this project starts with, for harnesses
// wired by hand (`memvault context`): the same text session-start injects,
// for work in the folder cwd.
func StartContext(v *vault.Vault, agent, thread, cwd string, limit int) string {
	r := &Runner{V: v, Harness: &Harness{Name: "manual", ContextLimit: limit}, Agent: agent}
	text, _ := r.startContext(thread, cwd)
	return text
}

// startContext assembles what a session starts with, most relevant first:
// a warning when the vault needs repair, how to use memory, the session's
// thread head, CONTINUITY.md's live sections, MEMORY.md, the learnings and
// decisions in scope for work in cwd; or, before any head is rendered, the
// open commitments and the latest structured rows of the thread. Every row
// appears once, at its first place in that order (dedupe), and what does
// not fit the harness's budget is cut from the end, whole rows only
// (layoutBlocks). It also returns the ids of the rows and nodes the text
// shows, so that the session's prompts do not repeat them.
func (r *Runner) startContext(thread, cwd string) (string, []string) {
	blocks := []block{noteBlock(UsageNote)}
	// A vault that refuses structured writes says so first, where it is
	// never cut (health.go).
	if !r.assumeHealthy {
		if w := healthWarning(r.health()); w != "" {
			blocks = append([]block{noteBlock(w)}, blocks...)
		}
	}
	// The heads as a refresh would leave them, as this session's agent may
	// see them: a refresh that had to wait (after a compaction, say) does
	// not make the context stale, and another agent's rows are not shown.
	heads := []string{vault.MemoryHead, vault.ContinuityHead}
	threadKey := ""
	if thread != "" {
		if th, err := vault.ParseThread(thread); err == nil {
			threadKey = th.String()
			heads = append(heads, th.HeadPath().String())
		}
	}
	texts := r.currentHeads(heads...)
	var head, cont, mem, index block
	if len(texts) == 3 && texts[2] != "" {
		head = parseHead(texts[2])
		head.ids = []string{threadRowID(threadKey)} // MEMORY.md's line for this thread points here
	}
	if texts[1] != "" {
		cont = liveContinuity(parseHead(texts[1]))
	}
	if texts[0] != "" {
		mem = parseHead(texts[0])
	}
	// Another thread's rows and nodes stay out; its line in MEMORY.md's
	// Threads goes last, so the thread's own rows are cut last (context_scope.go).
	if otherThreads(mem, threadKey) {
		cont, mem, index = r.newRowScope(threadKey, head, mem).scopeBlocks(head, cont, mem)
	}
	blocks = append(blocks, head, cont, mem, r.continuityInScope(cwd))
	if !hasRows(blocks[1:]) {
		blocks = append(blocks, r.structuredDigest(threadKey))
	}
	blocks = append(blocks, index)
	text, ids := layoutShown(dedupe(blocks), r.Harness.ContextLimit, startCutNote)
	shown := ids[:0]
	for _, id := range ids {
		if !strings.Contains(id, " ") { // not a thread's line (threadRowID)
			shown = append(shown, id)
		}
	}
	return text, shown
}

// startCutNote is the last line of a start context that was cut.
func startCutNote(rows, limit int) string {
	return fmt.Sprintf("[memvault: %s left out to stay within %d characters; find them with `memvault recall QUERY`, "+
		"the working memory with `memvault continuity status`]", plural(rows, "row"), limit)
}

// structuredDigest lists open commitments and the latest decisions,
// constraints, blockers and next steps of the thread and global rows, and
// of another thread's rows those that name an event of the thread.
func (r *Runner) structuredDigest(thread string) block {
	b := block{title: "# Memory (no MEMORY.md yet)"}
	st, err := r.V.LoadState()
	if err != nil {
		return b
	}
	sec := section{}
	// A row of another thread comes in when its text names an event of
	// this one (an explicit link, as in scopeBlocks).
	inScope := func(row *vault.Row) bool {
		if row.Thread == "" || row.Thread == thread {
			return true
		}
		for _, id := range namedIDs(row.Text) {
			if to := st.ByID[id]; thread != "" && to != nil && to.Thread == thread {
				return true
			}
		}
		return false
	}
	for _, row := range st.OpenCommitments() {
		if inScope(row) {
			sec.rows = append(sec.rows, idRow(fmt.Sprintf("- commitment %s: %s", row.ID, oneLine(row.Text)), row.ID, row.Text))
		}
	}
	keep := map[string]bool{"decision": true, "constraint": true, "blocker": true, "next": true, "fact": true, "learning": true}
	for i, n := len(st.Rows)-1, 0; i >= 0 && n < 20; i-- {
		row := st.Rows[i]
		if !row.Holds() || !keep[row.EffectiveKind()] || !inScope(row) {
			continue
		}
		sec.rows = append(sec.rows, idRow(fmt.Sprintf("- %s %s: %s", row.EffectiveKind(), row.ID, oneLine(row.Text)), row.ID, row.Text))
		n++
	}
	b.sections = []section{sec}
	return b
}

// continuityInScope lists the learnings and decisions whose scope is in
// play for work in cwd (global ones, the module or files of cwd relative to
// the project), smallest scope first, within their budgets in
// memvault.toml. The live sections come from the file itself (hand edits
// included), so only these come from the protocol's state. Each row
// carries the event that recorded it, so that it is not shown again when
// MEMORY.md already showed that event.
func (r *Runner) continuityInScope(cwd string) block {
	b := block{title: "# In scope here"}
	dir := ""
	if cwd != "" {
		dir = continuity.ProjectDir(r.V, cwd)
	}
	inj, err := continuity.ContinuityAtSessionStartFor(r.V, dir, r.Agent)
	if err != nil {
		if !r.refused(err) { // a memvault.toml that does not parse: said once
			logf(r.V, "%s session-start: learnings in scope: %v", r.Harness.Name, err)
		}
		return b
	}
	if len(inj.Learnings) > 0 {
		s := section{heading: "## Learnings in scope (smallest scope first)"}
		for _, l := range inj.Learnings {
			s.rows = append(s.rows, idRow("- "+l.Line, l.Event, l.Text))
		}
		b.sections = append(b.sections, s)
	}
	if len(inj.Decisions) > 0 {
		s := section{heading: "## Decisions in scope"}
		for _, d := range inj.Decisions {
			s.rows = append(s.rows, idRow("- "+d.Line, d.Event, d.Text))
		}
		b.sections = append(b.sections, s)
	}
	return b
}

// liveSections are the sections of CONTINUITY.md a session needs at once,
// in the order they are injected; the rest is a recall away. "blockers"
// is the heading of files made from the first template.
var liveSections = []string{"active goal", "current task", "next actions", "active blockers", "blockers"}

// liveContinuity keeps CONTINUITY.md's live sections, in liveSections'
// order, under a title that says what they are.
func liveContinuity(doc block) block {
	out := block{title: "# CONTINUITY (live sections)"}
	for _, name := range liveSections {
		for _, s := range doc.sections {
			if sectionName(s.heading) == name {
				out.sections = append(out.sections, s)
			}
		}
	}
	return out
}

// fit joins pieces in priority order within limit characters, each piece
// a block of lines; what does not fit is cut from the end, whole lines
// only, with a last line saying so. Prompt-submit's context uses it.
func fit(pieces []string, limit int) string {
	var blocks []block
	for _, p := range pieces {
		var s section
		for _, line := range strings.Split(strings.TrimSpace(p), "\n") {
			if strings.TrimSpace(line) != "" {
				s.rows = append(s.rows, row{text: line})
			}
		}
		blocks = append(blocks, block{sections: []section{s}})
	}
	return layoutBlocks(blocks, limit, func(rows, limit int) string {
		return fmt.Sprintf("[memvault: %s left out to stay within %d characters; more with `memvault recall QUERY`]", plural(rows, "row"), limit)
	})
}

func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}
