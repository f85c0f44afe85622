package lineage

// Self-summaries (docs/LINEAGE.md, "Self-summaries"; seed 004's periodic
// summary and reflection synthesis): a node, written by the cadence job,
// that sums up the agent's state from the ledger alone: the commitments
// open and how old they are, the decisions and learnings that changed,
// the blockers that keep coming back, and the reflections recorded. No
// model writes it.
//
// The agent's memory events (the rows a session summary lists under
// Recorded, its reflections, and reinforcements) are cut into windows in
// ledger order: a window ends at its SelfSummaryEvery-th event, or at the
// last event of a UTC day once the next event is on another day or the
// day has closed. Window k is self-summary k. The windows, and each node's
// bytes (the state it describes is the ledger folded up to the window's
// last event), follow from the ledger alone: now only decides whether the
// last day has closed. A window whose node exists is not written again.

import (
	"fmt"
	"strings"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/node"
)

// SelfSummaryEvery is how many of the agent's memory events make a
// self-summary before its day is over.
const SelfSummaryEvery = 25

// selfWindow is the events one self-summary covers.
type selfWindow struct {
	seq   int          // its number, from 1
	rows  []*vault.Row // the agent's memory events, in ledger order
	end   int          // the index in the state's rows of the last one
	byDay bool         // it ended with its day, not at SelfSummaryEvery
}

// selfCounted reports whether r is one of agent's memory events.
func selfCounted(r *vault.Row, agent string) bool {
	if r.Agent != agent {
		return false
	}
	k := vault.CanonicalKind(r.Kind)
	return recordedKind(k) || k == "reflection" || k == vault.KindLearningReinforce
}

// SelfSummaryBackfill is how many windows one run writes at most, the
// newest: a vault with a long history gets its recent self-summaries, not
// one for every day of its past; the older windows are skipped for good.
const SelfSummaryBackfill = 7

// selfWindows cuts agent's memory events of st into windows and returns
// those after window done whose end is known at now, the newest
// SelfSummaryBackfill of them.
func selfWindows(st *vault.State, agent string, now time.Time, done int) []selfWindow {
	out, _ := cutWindows(st, agent, now, done)
	if len(out) > SelfSummaryBackfill {
		out = out[len(out)-SelfSummaryBackfill:]
	}
	return out
}

// cutWindows is selfWindows without the cap, and the events after the
// last window.
func cutWindows(st *vault.State, agent string, now time.Time, done int) ([]selfWindow, []*vault.Row) {
	var out []selfWindow
	cur := selfWindow{seq: 1}
	closeCur := func(byDay bool) {
		cur.byDay = byDay
		if cur.seq > done {
			out = append(out, cur)
		}
		cur = selfWindow{seq: cur.seq + 1}
	}
	for i, r := range st.Rows {
		if !selfCounted(r, agent) {
			continue
		}
		if len(cur.rows) > 0 && dayOf(r) != dayOf(cur.rows[len(cur.rows)-1]) {
			closeCur(true)
		}
		cur.rows, cur.end = append(cur.rows, r), i
		if len(cur.rows) == SelfSummaryEvery {
			closeCur(false)
		}
	}
	if len(cur.rows) > 0 && dayClosed(dayOf(cur.rows[len(cur.rows)-1]), now) {
		closeCur(true)
	}
	return out, cur.rows
}

func dayOf(r *vault.Row) string { return r.Time().UTC().Format("2006-01-02") }

// lastSelfSummary is the number of agent's last self-summary in st: the
// greatest its node.created rows name.
func lastSelfSummary(st *vault.State, agent string) int {
	last := 0
	for _, r := range st.Rows {
		if r.Kind != vault.KindNodeCreated || r.Agent != agent || !strings.HasPrefix(r.Text, node.SelfSummary+" ") {
			continue
		}
		var k int
		if _, err := fmt.Sscanf(r.Text, node.SelfSummary+" %d:", &k); err == nil && k > last {
			last = k
		}
	}
	return last
}

// SelfSummarize writes, in tx, the self-summaries of tx's agent that are
// due at now (every window after the last one written), and returns them.
func SelfSummarize(tx *vault.Tx, now time.Time) ([]*node.Node, error) {
	st, err := tx.State()
	if err != nil {
		return nil, err
	}
	agent := tx.Agent()
	windows := selfWindows(st, agent, now, lastSelfSummary(st, agent))
	var out []*node.Node
	at := &vault.State{ByID: map[string]*vault.Row{}} // st folded up to a window's end
	next := 0
	for _, w := range windows {
		for ; next <= w.end; next++ {
			r := st.Rows[next]
			at.Add(&vault.Row{Event: r.Event, File: r.File, Line: r.Line})
		}
		made, _, err := tx.CreateNode(selfNode(at, agent, w))
		if err != nil {
			return nil, err
		}
		out = append(out, made)
	}
	return out, nil
}

// selfNode is the self-summary of window w, from at, the ledger folded up
// to its last event.
func selfNode(at *vault.State, agent string, w selfWindow) *node.Node {
	rows := make([]*vault.Row, len(w.rows)) // as they stood at the window's end
	for i, r := range w.rows {
		rows[i] = at.Get(r.ID)
	}
	first, last := rows[0], rows[len(rows)-1]
	cutoff := last.Time()
	var open []*vault.Row
	for _, r := range at.OpenCommitments() {
		if r.Agent == agent {
			open = append(open, r)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Self-summary %d of agent %s\n\n", w.seq, agent)
	why := fmt.Sprintf("its %d-event mark", SelfSummaryEvery)
	if w.byDay {
		why = "the end of " + dayOf(last)
	}
	fmt.Fprintf(&b, "%d events, %s to %s, up to %s. The state below is the ledger's at `%s`.\n",
		len(w.rows), vault.FormatTS(first.Time()), vault.FormatTS(cutoff), why, last.ID)
	writeOpenCommitments(&b, open, cutoff)
	writeChanged(&b, at, rows, "decision", "Decisions")
	writeChanged(&b, at, rows, "learning", "Learnings")
	writeRecurringBlockers(&b, at, agent, rows)
	writeReflections(&b, rows)
	b.WriteString("\n## Events\n\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "- `%s` %s%s: %s\n", r.ID, r.EffectiveKind(), threadNote(r), selfText(r))
	}
	return &node.Node{Kind: node.SelfSummary, Agent: agent, Threads: []string{}, Children: []string{},
		Created: vault.FormatTS(cutoff),
		Title:   fmt.Sprintf("%s %d: %d events, %d open commitments", node.SelfSummary, w.seq, len(w.rows), len(open)),
		Body:    b.String()}
}

func threadNote(r *vault.Row) string {
	if r.Thread == "" {
		return ""
	}
	return " (" + r.Thread + ")"
}

func selfText(r *vault.Row) string { return vault.Clip(vault.OneLine(r.Text), recordedRunes) }

// writeOpenCommitments lists the commitments open at cutoff, oldest first,
// with their age then.
func writeOpenCommitments(b *strings.Builder, open []*vault.Row, cutoff time.Time) {
	if len(open) == 0 {
		return
	}
	b.WriteString("\n## Open commitments\n\n")
	for _, r := range open {
		fmt.Fprintf(b, "- `%s`%s: %s (open %s, since %s)\n", r.ID, threadNote(r), selfText(r),
			age(cutoff.Sub(r.Time())), r.Time().UTC().Format("2006-01-02"))
	}
}

// age says a duration the way a person reads an age: days, else hours,
// else minutes.
func age(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
	case d >= 2*time.Hour:
		return fmt.Sprintf("%d hours", int(d/time.Hour))
	case d >= 2*time.Minute:
		return fmt.Sprintf("%d minutes", int(d/time.Minute))
	}
	return "under 2 minutes"
}

// writeChanged lists the rows of kind (decision, learning) that the
// window's events recorded or changed (reinforced, superseded, retracted,
// closed), each once, with its status at the window's end and what the
// window did to it.
func writeChanged(b *strings.Builder, at *vault.State, rows []*vault.Row, kind, title string) {
	var order []*vault.Row
	did := map[string][]string{}
	for _, r := range rows {
		target := r
		if k := vault.CanonicalKind(r.Kind); (vault.CorrectionKinds[k] || k == vault.KindLearningReinforce) && len(r.Links) > 0 {
			if target = at.Get(r.Links[0]); target == nil {
				continue
			}
		}
		if target.EffectiveKind() != kind {
			continue
		}
		what := "recorded"
		if target != r {
			what = vault.CanonicalKind(r.Kind) + " by `" + r.ID + "`"
		}
		if did[target.ID] == nil {
			order = append(order, target)
		}
		did[target.ID] = append(did[target.ID], what)
	}
	if len(order) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## %s\n\n", title)
	for _, r := range order {
		fmt.Fprintf(b, "- `%s`%s: %s (%s; %s)\n", r.ID, threadNote(r), selfText(r), at.Status(r), strings.Join(did[r.ID], ", "))
	}
}

// writeRecurringBlockers lists the blockers the agent recorded more than
// once (the same words, case and punctuation aside) up to the window's end,
// one of them in the window: how many times, which events, how many hold.
func writeRecurringBlockers(b *strings.Builder, at *vault.State, agent string, window []*vault.Row) {
	inWindow := map[string]bool{}
	for _, r := range window {
		inWindow[r.ID] = true
	}
	groups := map[string][]*vault.Row{}
	var keys []string
	for _, r := range at.Rows {
		if r.Agent != agent || r.EffectiveKind() != "blocker" || r.RetractedBy != "" {
			continue
		}
		k := blockerKey(r.Text)
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	first := true
	for _, k := range keys {
		g := groups[k]
		if len(g) < 2 || !anyIn(g, inWindow) {
			continue
		}
		if first {
			b.WriteString("\n## Recurring blockers\n\n")
			first = false
		}
		ids, holding := make([]string, len(g)), 0
		for i, r := range g {
			ids[i] = r.ID
			if r.Holds() {
				holding++
			}
		}
		fmt.Fprintf(b, "- %s: recorded %d times (`%s`), %d still open\n", selfText(g[len(g)-1]), len(g),
			strings.Join(ids, "`, `"), holding)
	}
}

// blockerKey is a blocker's words, lower case, without punctuation.
func blockerKey(s string) string {
	f := strings.FieldsFunc(strings.ToLower(s), func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c > 127)
	})
	return strings.Join(f, " ")
}

func anyIn(rows []*vault.Row, set map[string]bool) bool {
	for _, r := range rows {
		if set[r.ID] {
			return true
		}
	}
	return false
}
