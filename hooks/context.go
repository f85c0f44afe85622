package hooks

// What session start injects: the head, the session's thread, the live
// part of CONTINUITY.md and the usage note, fitted to a budget.

import (
	"fmt"
	"strings"

	"github.com/memvault/memvault/vault"
)

// StartContext is what a session of this project starts with, for harnesses
// wired by hand (`memvault context`): the same text session-start injects,
// for work in the folder cwd.
func StartContext(v *vault.Vault, agent, thread, cwd string, limit int) string {
	r := &Runner{V: v, Harness: &Harness{Name: "manual", ContextLimit: limit}, Agent: agent}
	return r.startContext(thread, cwd)
}

// startContext assembles what a session starts with, by priority: how to
// use memory, MEMORY.md, the session's thread head, CONTINUITY.md's live
// sections, the learnings and decisions in scope for work in cwd; or,
// before any head is rendered, the open commitments and the latest
// structured rows of the thread.
func (r *Runner) startContext(thread, cwd string) string {
	var pieces []string
	pieces = append(pieces, usageNote)
	// The heads as a refresh would leave them: a refresh that had to wait
	// (after a compaction, say) does not make the context stale.
	heads := []string{vault.MemoryHead}
	if thread != "" {
		if th, err := vault.ParseThread(thread); err == nil {
			heads = append(heads, th.HeadPath().String())
		}
	}
	for _, head := range r.currentHeads(heads...) {
		if head != "" {
			pieces = append(pieces, head)
		}
	}
	if c := liveContinuity(readFile(r.V, "CONTINUITY.md")); c != "" {
		pieces = append(pieces, c)
	}
	if c := r.continuityInScope(cwd); c != "" {
		pieces = append(pieces, c)
	}
	if len(pieces) == 1 {
		if rows := r.structuredDigest(thread); rows != "" {
			pieces = append(pieces, rows)
		}
	}
	return fit(pieces, r.Harness.ContextLimit)
}

const usageNote = `memvault: this project has a memory (.memory/). Search it with ` +
	"`memvault recall QUERY`" + `; drill into a node id (n_…) with ` + "`memvault expand ID`" + `.
Record as you work, one per line in your replies: DECISION: …, NEXT: …, BLOCKER: …, LEARNED: …, COMMIT: … (a promise), CLOSE: <id>, THREAD: kind:slug.`

// structuredDigest lists open commitments and the latest decisions,
// constraints, blockers and next steps of the thread and global rows.
func (r *Runner) structuredDigest(thread string) string {
	st, err := r.V.LoadState()
	if err != nil {
		return ""
	}
	var lines []string
	for _, row := range st.OpenCommitments() {
		if row.Thread == "" || row.Thread == thread {
			lines = append(lines, fmt.Sprintf("- commitment %s: %s", row.ID, oneLine(row.Text)))
		}
	}
	keep := map[string]bool{"decision": true, "constraint": true, "blocker": true, "next": true, "fact": true, "learning": true}
	var recent []string
	for i := len(st.Rows) - 1; i >= 0 && len(recent) < 20; i-- {
		row := st.Rows[i]
		if !row.Holds() || !keep[row.EffectiveKind()] || (row.Thread != "" && row.Thread != thread) {
			continue
		}
		recent = append(recent, fmt.Sprintf("- %s %s: %s", row.EffectiveKind(), row.ID, oneLine(row.Text)))
	}
	if len(lines)+len(recent) == 0 {
		return ""
	}
	return "## Memory (no MEMORY.md yet)\n" + strings.Join(append(lines, recent...), "\n")
}

// continuityInScope lists the learnings and decisions whose scope is in
// play for work in cwd (global ones, the module or files of cwd relative to
// the project), smallest scope first, within their budgets in
// memvault.toml. The live sections come from the file itself (hand edits
// included), so only these come from the protocol's state.
func (r *Runner) continuityInScope(cwd string) string {
	dir := ""
	if cwd != "" {
		dir = r.V.ProjectDir(cwd)
	}
	inj, err := r.V.ContinuityAtSessionStart(dir)
	if err != nil {
		logf(r.V, "%s session-start: learnings in scope: %v", r.Harness.Name, err)
		return ""
	}
	var b strings.Builder
	if len(inj.Learnings) > 0 {
		b.WriteString("## Learnings in scope (smallest scope first)\n")
		for _, l := range inj.Learnings {
			b.WriteString("- " + l.Line() + "\n")
		}
	}
	if len(inj.Decisions) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("## Decisions in scope\n")
		for _, d := range inj.Decisions {
			b.WriteString("- " + d.Line() + "\n")
		}
	}
	return b.String()
}

// liveContinuity keeps the sections of CONTINUITY.md a session needs at
// once; the rest is a recall away.
func liveContinuity(text string) string {
	if text == "" {
		return ""
	}
	// "blockers" is the heading of files made from the first template.
	live := map[string]bool{"active goal": true, "current task": true, "next actions": true, "active blockers": true, "blockers": true}
	var out []string
	keep := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "## ") {
			keep = live[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(line, "## ")))]
		}
		if keep {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "# CONTINUITY (live sections)\n" + strings.Join(out, "\n")
}

// fit joins pieces in priority order within limit characters. A piece that
// does not fit whole is cut at a line boundary; later pieces are dropped.
func fit(pieces []string, limit int) string {
	var b strings.Builder
	for _, p := range pieces {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		sep := 0
		if b.Len() > 0 {
			sep = 2
		}
		if b.Len()+sep+len(p) <= limit {
			if sep > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(p)
			continue
		}
		room := limit - b.Len() - sep - len("\n[memvault: cut to fit; more with memvault recall]")
		var kept []string
		used := 0
		for _, line := range strings.Split(p, "\n") {
			if used+len(line)+1 > room {
				break
			}
			kept = append(kept, line)
			used += len(line) + 1
		}
		if len(kept) > 0 {
			if sep > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(strings.Join(kept, "\n"))
		}
		b.WriteString("\n[memvault: cut to fit; more with memvault recall]")
		break
	}
	return b.String()
}
