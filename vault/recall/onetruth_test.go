package recall

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

// One memory, one truth: whatever way a row comes in (a CLI verb, a
// control line in an assistant's reply, `remember`, a correction), every
// view of what holds now says the same. After each step of a random
// sequence, the decisions, learnings, next actions, blockers and
// commitments that hold are the same in the fold (`ledger --current`),
// CONTINUITY.md, MEMORY.md, the thread heads and recall; what no longer
// holds is in none of them (recall --history finds it, marked).
func TestOneTruth(t *testing.T) {
	t.Parallel()
	seeds := []int64{1, 2, 3}
	steps := 36
	if testing.Short() {
		seeds, steps = seeds[:1], 20
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			w := &truthWorld{t: t, v: testvault.New(t), rng: rand.New(rand.NewSource(seed))}
			for i := 0; i < steps; i++ {
				what := w.step()
				w.check(fmt.Sprintf("step %d (%s)", i+1, what))
			}
		})
	}
}

// truthKinds are the kinds whose rows make up "what holds now".
var truthKinds = map[string]bool{"decision": true, "learning": true, "next": true, "blocker": true, "commitment.open": true}

// tokenRE finds the token each row's text starts with.
var tokenRE = regexp.MustCompile(`\bt\d{3}x\b`)

type truthWorld struct {
	t     *testing.T
	v     *vault.Vault
	rng   *rand.Rand
	n     int
	msgs  int
	moved []string // tokens the last step touched, checked in recall
}

var truthThreads = []string{"", "project:shop", "person:alice"}

func (w *truthWorld) token() string {
	w.n++
	return fmt.Sprintf("t%03dx", w.n)
}

// holding returns the rows of truthKinds that hold now, by kind.
func (w *truthWorld) holding() (map[string][]*vault.Row, *vault.State) {
	st, err := w.v.LoadState()
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string][]*vault.Row{}
	for _, r := range st.Rows {
		if k := r.EffectiveKind(); truthKinds[k] && r.Holds() {
			out[k] = append(out[k], r)
		}
	}
	return out, st
}

func (w *truthWorld) update(fn func(tx *vault.Tx) error) {
	w.t.Helper()
	if _, err := w.v.Update(vault.TxOptions{Session: "s1"}, fn); err != nil {
		w.t.Fatal(err)
	}
}

func (w *truthWorld) cont(fn func(ct *continuity.ContinuityTx) error) {
	w.t.Helper()
	if _, err := continuity.UpdateContinuity(w.v, continuity.ContinuityOptions{TxOptions: vault.TxOptions{Session: "s1"}}, fn); err != nil {
		w.t.Fatal(err)
	}
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.Intn(len(xs))] }

// step makes one random change through one of the ways in, keeping each
// kind's holding rows within CONTINUITY.md's section quotas so that every
// view can show all of them.
func (w *truthWorld) step() string {
	hold, _ := w.holding()
	open := len(hold["next"]) + len(hold["commitment.open"])
	tok := w.token()
	thread := pick(w.rng, truthThreads)
	w.moved = []string{tok}
	switch op := w.rng.Intn(12); {
	case op == 0 && len(hold["decision"]) < 4 && len(hold["blocker"]) < 4:
		kind := pick(w.rng, []string{"decision", "blocker"})
		w.update(func(tx *vault.Tx) error {
			_, err := memory.Remember(tx, memory.Input{Kind: kind, Thread: thread, Text: tok + " remembered"})
			return err
		})
		return "remember " + kind
	case op == 1 && len(hold["decision"]) < 4:
		in := continuity.DecideInput{Decision: tok + " decided", Rationale: "it is simpler"}
		if ds := hold["decision"]; len(ds) > 0 && w.rng.Intn(2) == 0 {
			old := pick(w.rng, ds)
			in.Supersedes = old.ID
			w.moved = append(w.moved, tokenRE.FindString(old.Text))
		}
		w.cont(func(ct *continuity.ContinuityTx) error { _, err := ct.Decide(in); return err })
		return "decide"
	case op == 2 && len(hold["learning"]) < 6:
		w.cont(func(ct *continuity.ContinuityTx) error {
			_, err := ct.Learn(continuity.LearnInput{Error: tok + " failed", Prevention: "check first"})
			return err
		})
		return "learn"
	case op == 3 && open < 7:
		w.cont(func(ct *continuity.ContinuityTx) error { return ct.Next(tok+" to do", w.rng.Intn(3) == 0) })
		return "next"
	case op == 4 && open > 0:
		items := append(append([]*vault.Row(nil), hold["next"]...), hold["commitment.open"]...)
		r := pick(w.rng, items)
		w.moved = append(w.moved, tokenRE.FindString(r.Text))
		arg := pick(w.rng, []string{r.ID, r.Text})
		w.cont(func(ct *continuity.ContinuityTx) error { return ct.Done(arg) })
		return "done " + arg
	case op == 5 && open < 7:
		w.update(func(tx *vault.Tx) error {
			_, err := memory.OpenCommitment(tx, memory.Input{Thread: thread, Text: tok + " promised"})
			return err
		})
		return "commitment"
	case op == 6 && len(hold["commitment.open"]) > 0:
		r := pick(w.rng, hold["commitment.open"])
		w.moved = append(w.moved, tokenRE.FindString(r.Text))
		w.update(func(tx *vault.Tx) error { _, err := memory.CloseCommitment(tx, r.ID, ""); return err })
		return "close"
	case op == 7 || op == 8:
		var rows []*vault.Row
		for _, k := range []string{"decision", "learning", "next", "blocker", "commitment.open"} {
			rows = append(rows, hold[k]...)
		}
		if len(rows) == 0 {
			return "nothing to correct"
		}
		r := pick(w.rng, rows)
		w.moved = append(w.moved, tokenRE.FindString(r.Text))
		if op == 7 {
			w.update(func(tx *vault.Tx) error { _, err := memory.Retract(tx, r.ID, "wrong"); return err })
			return "retract " + r.Kind
		}
		w.update(func(tx *vault.Tx) error { _, err := memory.Supersede(tx, r.ID, tok+" replaced"); return err })
		return "supersede " + r.Kind
	case op == 9 && len(hold["learning"]) > 0:
		r := pick(w.rng, hold["learning"])
		w.moved = append(w.moved, tokenRE.FindString(r.Text))
		c, err := continuity.LoadContinuity(w.v)
		if err != nil {
			w.t.Fatal(err)
		}
		id := c.Learning(r.ID).ID
		w.cont(func(ct *continuity.ContinuityTx) error { _, err := ct.Invalidate(id, "it misled us"); return err })
		return "invalidate"
	default:
		return w.controlLines(hold, tok, thread)
	}
}

// controlLines writes an assistant message with control lines into the
// session's transcript and extracts them, as the Stop hook does.
func (w *truthWorld) controlLines(hold map[string][]*vault.Row, tok, thread string) string {
	var lines []string
	if thread != "" {
		lines = append(lines, "THREAD: "+thread)
	}
	open := len(hold["next"]) + len(hold["commitment.open"])
	switch w.rng.Intn(5) {
	case 0:
		if len(hold["decision"]) < 4 {
			lines = append(lines, "DECISION: "+tok+" chosen | fewer moving parts")
		}
	case 1:
		if len(hold["learning"]) < 6 {
			lines = append(lines, "LEARNED: "+tok+" broke")
		}
	case 2:
		if open < 7 {
			lines = append(lines, "NEXT: "+tok+" next", "- COMMIT: "+w.token()+" will do")
		}
	case 3:
		if len(hold["blocker"]) < 4 {
			lines = append(lines, "BLOCKER: "+tok+" stuck")
		}
	}
	if ns := hold["next"]; len(ns) > 0 && w.rng.Intn(2) == 0 {
		r := pick(w.rng, ns)
		w.moved = append(w.moved, tokenRE.FindString(r.Text))
		lines = append(lines, "DONE: "+pick(w.rng, []string{r.Text, r.ID}))
	}
	if cs := hold["commitment.open"]; len(cs) > 0 && w.rng.Intn(3) == 0 {
		r := pick(w.rng, cs)
		w.moved = append(w.moved, tokenRE.FindString(r.Text))
		lines = append(lines, "CLOSE: "+r.ID)
	}
	w.msgs++
	ref := transcript.Ref{Agent: w.v.Config.Agent, Session: "s1"}
	text := "Here is where we are.\n" + strings.Join(lines, "\n")
	w.update(func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(ref, []transcript.Message{{ID: fmt.Sprint("a", w.msgs), Role: transcript.RoleAssistant, Text: text}})
		return err
	})
	w.update(func(tx *vault.Tx) error { return lineage.ExtractControls(tx, ref, "") })
	return "control lines " + strings.Join(lines, "; ")
}

// check refreshes every head and compares every view with the fold.
func (w *truthWorld) check(step string) {
	t := w.t
	t.Helper()
	if _, err := heads.Refresh(w.v, heads.RefreshOptions{Memory: true, AllThreads: true}); err != nil {
		t.Fatalf("%s: refresh: %v", step, err)
	}
	w.cont(func(*continuity.ContinuityTx) error { return nil })

	hold, st := w.holding()
	want := map[string]bool{} // every holding token
	byThread := map[string][]string{}
	for k, rows := range hold {
		for _, r := range rows {
			tok := tokenRE.FindString(r.Text)
			want[tok] = true
			if k != "next" {
				byThread[r.Thread] = append(byThread[r.Thread], tok)
			}
		}
	}
	gone := map[string]bool{}
	for _, r := range st.Rows {
		if truthKinds[r.EffectiveKind()] && !r.Holds() {
			gone[tokenRE.FindString(r.Text)] = true
		}
	}

	// ledger --current
	cur := map[string]bool{}
	for _, r := range st.Select(vault.Filter{Current: true}) {
		if truthKinds[r.EffectiveKind()] {
			cur[tokenRE.FindString(r.Text)] = true
		}
	}
	sameTokens(t, step, "ledger --current", cur, want)

	// CONTINUITY.md: the live sections hold exactly what holds.
	doc := w.read(vault.ContinuityHead)
	got := tokensIn(sections(doc, continuity.SecNext, continuity.SecBlockers, continuity.SecDecisions, continuity.SecLearnings))
	sameTokens(t, step, "CONTINUITY.md", got, want)

	// MEMORY.md: everything but the learnings of threads (those are in
	// their thread heads).
	memWant := map[string]bool{}
	for k, rows := range hold {
		for _, r := range rows {
			if k != "learning" || r.Thread == "" {
				memWant[tokenRE.FindString(r.Text)] = true
			}
		}
	}
	mem := w.read(vault.MemoryHead)
	sameTokens(t, step, "MEMORY.md", tokensIn(sections(mem, "Decisions", "Blockers", "Commitments", "Next actions", "Notes")), memWant)

	// Thread heads: nothing that no longer holds, nothing of another
	// thread, and every decision, blocker, commitment and learning of the
	// thread (next actions: the head shows the first few).
	for _, key := range truthThreads[1:] {
		th, _ := vault.ParseThread(key)
		body := w.read(th.HeadPath().String())
		if body == "" {
			continue
		}
		got := tokensIn(body)
		for tok := range got {
			if !want[tok] {
				t.Fatalf("%s: %s shows %s, which does not hold\n%s", step, key, tok, body)
			}
		}
		for _, tok := range byThread[key] {
			if !got[tok] {
				t.Fatalf("%s: %s does not show %s, which holds\n%s", step, key, tok, body)
			}
		}
	}

	// recall, for what this step touched: a row that holds is found and
	// active, one that does not is found only with --history, marked.
	for _, tok := range w.moved {
		if tok == "" || !want[tok] && !gone[tok] {
			continue
		}
		for _, history := range []bool{false, true} {
			res, err := Recall(w.v, RecallOptions{Query: tok, Agent: w.v.Config.Agent, AllThreads: true,
				Tier: TierStructured, History: history})
			if err != nil {
				t.Fatalf("%s: recall %s: %v", step, tok, err)
			}
			var found []Hit
			for _, h := range res.Hits {
				if tokenRE.FindString(h.Text) == tok && truthKinds[h.Kind] {
					found = append(found, h)
				}
			}
			switch {
			case want[tok] && (len(found) != 1 || found[0].Status != vault.StatusActive):
				t.Fatalf("%s: recall %s (history %v): %+v, want one active hit", step, tok, history, found)
			case gone[tok] && !history && len(found) != 0:
				t.Fatalf("%s: recall %s returns a row that no longer holds: %+v", step, tok, found)
			case gone[tok] && history && (len(found) != 1 || found[0].Status == vault.StatusActive):
				t.Fatalf("%s: recall --history %s: %+v, want one marked hit", step, tok, found)
			}
		}
	}
}

func (w *truthWorld) read(rel string) string {
	data, err := os.ReadFile(filepath.Join(w.v.Root, rel))
	if err != nil && !os.IsNotExist(err) {
		w.t.Fatal(err)
	}
	return string(data)
}

// sections returns the bodies of the "## " sections named.
func sections(doc string, names ...string) string {
	var b strings.Builder
	for _, part := range strings.Split(doc, "\n## ") {
		title, body, _ := strings.Cut(part, "\n")
		for _, n := range names {
			if strings.EqualFold(strings.TrimSpace(title), n) {
				b.WriteString(body)
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

func tokensIn(s string) map[string]bool {
	out := map[string]bool{}
	for _, tok := range tokenRE.FindAllString(s, -1) {
		out[tok] = true
	}
	return out
}

func sameTokens(t *testing.T, step, view string, got, want map[string]bool) {
	t.Helper()
	var missing, extra []string
	for tok := range want {
		if !got[tok] {
			missing = append(missing, tok)
		}
	}
	for tok := range got {
		if !want[tok] {
			extra = append(extra, tok)
		}
	}
	if len(missing)+len(extra) > 0 {
		sort.Strings(missing)
		sort.Strings(extra)
		t.Fatalf("%s: %s disagrees with the fold: missing %v, shows %v that do not hold", step, view, missing, extra)
	}
}

// A session summary's node.created carries the session's own thread, not
// the first of its threads in alphabetical order, so the node shows in
// that thread head's Lineage.
func TestSummaryNodeTakesTheSessionThread(t *testing.T) {
	v := testvault.New(t)
	ref := transcript.Ref{Agent: v.Config.Agent, Session: "s1"}
	if _, err := v.Update(vault.TxOptions{Session: "s1"}, func(tx *vault.Tx) error {
		if _, err := memory.Remember(tx, memory.Input{Kind: "fact", Thread: "project:alpha", Text: "a side note"}); err != nil {
			return err
		}
		_, _, err := tx.AppendText(ref, []transcript.Message{{ID: "u1", Role: transcript.RoleUser, Text: "plan the zeta work"}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Update(vault.TxOptions{Session: "s1"}, func(tx *vault.Tx) error {
		_, _, err := lineage.Summarize(tx, ref, lineage.SummaryOptions{Thread: "project:zeta"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Rows {
		if r.Kind == "node.created" && r.Thread != "project:zeta" {
			t.Fatalf("node.created of the summary has thread %q, want the session's project:zeta", r.Thread)
		}
	}
}
