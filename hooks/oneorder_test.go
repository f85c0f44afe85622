package hooks

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

// TestViewsAgreeOnWhatIsOpen is the property of issue 34's "one meaning of
// holds": after any sequence of next / blocker / commitment / done
// operations, made every way they can be made (the protocol's verbs, a
// plain remember, DONE: and CLOSE: lines of a reply, done by number, by
// id, by text in other case and punctuation, retractions), the open items
// and their order are the same in every view: MEMORY.md, each thread head,
// CONTINUITY.md, and what a session starts with (`memvault context` and
// the session-start injection, one function). The expected state is kept
// by the test's own model of the rule, not read from the code: next
// actions are a queue in the order given, `next --first` puts one on top;
// commitments and blockers are listed in the order they were opened.
func TestViewsAgreeOnWhatIsOpen(t *testing.T) {
	t.Parallel()
	seeds := []uint64{1, 2, 3, 4}
	steps := 30
	if testing.Short() {
		seeds, steps = seeds[:2], 18
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			w := &orderWorld{t: t, v: testvault.New(t), rng: rand.New(rand.NewPCG(seed, 34))}
			for i := range steps {
				what := w.step()
				w.check(fmt.Sprintf("step %d (%s)", i+1, what))
			}
		})
	}
}

var orderTokenRE = regexp.MustCompile(`\bt\d{3}x\b`)

var orderThreads = []string{"", "project:shop", "project:blog"}

// openItem is one open item of the model.
type openItem struct {
	tok, id, text, kind, thread string
	seq                         int // when it was opened
}

type orderWorld struct {
	t        *testing.T
	v        *vault.Vault
	rng      *rand.Rand
	n, msgs  int
	next     []openItem // the queue
	commits  []openItem // oldest first
	blockers []openItem // oldest first
	closed   []string   // tokens of items no longer open
}

func (w *orderWorld) token() string { w.n++; return fmt.Sprintf("t%03dx", w.n) }

// idOf finds the row recorded with tok.
func (w *orderWorld) idOf(tok string) string {
	st, err := w.v.LoadState()
	if err != nil {
		w.t.Fatal(err)
	}
	for i := len(st.Rows) - 1; i >= 0; i-- {
		if r := st.Rows[i]; strings.HasPrefix(r.Text, tok+" ") {
			return r.ID
		}
	}
	w.t.Fatalf("no row for %s", tok)
	return ""
}

func (w *orderWorld) cont(thread string, fn func(ct *continuity.ContinuityTx) error) {
	w.t.Helper()
	if _, err := continuity.UpdateContinuity(w.v, continuity.ContinuityOptions{TxOptions: vault.TxOptions{Session: "s1"}, Thread: thread}, fn); err != nil {
		w.t.Fatal(err)
	}
}

func (w *orderWorld) update(fn func(tx *vault.Tx) error) {
	w.t.Helper()
	if _, err := w.v.Update(vault.TxOptions{Session: "s1"}, fn); err != nil {
		w.t.Fatal(err)
	}
}

// all is every open item, next actions then commitments then blockers.
func (w *orderWorld) all() []openItem {
	return slices.Concat(w.next, w.commits, w.blockers)
}

// remove takes the item with id out of the model.
func (w *orderWorld) remove(id string) {
	for _, l := range []*[]openItem{&w.next, &w.commits, &w.blockers} {
		for i, it := range *l {
			if it.id == id {
				w.closed = append(w.closed, it.tok)
				*l = slices.Delete(*l, i, i+1)
				return
			}
		}
	}
	w.t.Fatalf("the model has no open %s", id)
}

// step makes one random change; open items stay within CONTINUITY.md's
// quotas so that every view can show all of them.
func (w *orderWorld) step() string {
	tok := w.token()
	thread := orderThreads[w.rng.IntN(len(orderThreads))]
	numbered := len(w.next) + len(w.commits)
	switch op := w.rng.IntN(9); {
	case op <= 1 && numbered < 8:
		first := w.rng.IntN(3) == 0
		text := tok + " next action"
		w.cont(thread, func(ct *continuity.ContinuityTx) error { return ct.Next(text, first) })
		it := openItem{tok: tok, id: w.idOf(tok), text: text, kind: "next", thread: thread, seq: w.n}
		if first {
			w.next = append([]openItem{it}, w.next...)
		} else {
			w.next = append(w.next, it)
		}
		return fmt.Sprintf("next %q first=%v in %q", text, first, thread)
	case op == 2 && len(w.blockers) < 4:
		text := tok + " blocks progress"
		w.update(func(tx *vault.Tx) error {
			_, err := memory.Remember(tx, memory.Input{Kind: "blocker", Thread: thread, Text: text})
			return err
		})
		w.blockers = append(w.blockers, openItem{tok: tok, id: w.idOf(tok), text: text, kind: "blocker", thread: thread, seq: w.n})
		return "blocker in " + thread
	case op == 3 && numbered < 8:
		text := tok + " promised to someone"
		w.update(func(tx *vault.Tx) error {
			_, err := memory.OpenCommitment(tx, memory.Input{Thread: thread, Text: text})
			return err
		})
		w.commits = append(w.commits, openItem{tok: tok, id: w.idOf(tok), text: text, kind: "commitment.open", thread: thread, seq: w.n})
		return "commitment in " + thread
	case op == 4 && numbered > 0:
		n := 1 + w.rng.IntN(numbered)
		it := slices.Concat(w.next, w.commits)[n-1]
		w.cont("", func(ct *continuity.ContinuityTx) error { return ct.Done(fmt.Sprint(n)) })
		w.remove(it.id)
		return fmt.Sprintf("done %d (%s)", n, it.tok)
	case op == 5 && len(w.all()) > 0:
		all := w.all()
		it := all[w.rng.IntN(len(all))]
		arg := []string{it.id, strings.ToUpper(it.text) + "!", "  " + strings.ReplaceAll(it.text, " ", ",  ") + "."}[w.rng.IntN(3)]
		w.cont("", func(ct *continuity.ContinuityTx) error { return ct.Done(arg) })
		w.remove(it.id)
		return fmt.Sprintf("done %q (%s)", arg, it.kind)
	case op == 6 && len(w.all()) > 0:
		return w.doneLine()
	case op == 7 && len(w.commits) > 0:
		it := w.commits[w.rng.IntN(len(w.commits))]
		w.update(func(tx *vault.Tx) error { _, err := memory.CloseCommitment(tx, it.id, ""); return err })
		w.remove(it.id)
		return "close " + it.tok
	case op == 8 && len(w.all()) > 0:
		all := w.all()
		it := all[w.rng.IntN(len(all))]
		w.update(func(tx *vault.Tx) error { _, err := memory.Retract(tx, it.id, "wrong"); return err })
		w.remove(it.id)
		return "retract " + it.kind
	}
	return "nothing"
}

// doneLine closes an open item with a DONE: line of a reply, by its text
// (another case, a trailing period) or as a head's line with its id, as
// the Stop hook extracts it.
func (w *orderWorld) doneLine() string {
	all := w.all()
	it := all[w.rng.IntN(len(all))]
	line := "DONE: " + strings.ToUpper(it.text[:1]) + it.text[1:] + "."
	if w.rng.IntN(2) == 0 {
		line = "- DONE: " + it.text + " (`" + it.id + "`)"
	}
	w.msgs++
	ref := transcript.Ref{Agent: w.v.Config.Agent, Session: "s1"}
	text := "Done with that.\n" + line
	w.update(func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(ref, []transcript.Message{{ID: fmt.Sprint("a", w.msgs), Role: transcript.RoleAssistant, Text: text}})
		return err
	})
	w.update(func(tx *vault.Tx) error { return lineage.ExtractControls(tx, ref, "") })
	w.remove(it.id)
	return fmt.Sprintf("%s (%s)", line, it.kind)
}

func toks(items []openItem) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.tok)
	}
	return out
}

func inThread(items []openItem, thread string) []openItem {
	var out []openItem
	for _, it := range items {
		if it.thread == thread {
			out = append(out, it)
		}
	}
	return out
}

// section is the body of the "## name" section of doc.
func sectionOf(doc, name string) string {
	for _, part := range strings.Split(doc, "\n## ") {
		title, body, _ := strings.Cut(part, "\n")
		if strings.TrimSpace(strings.SplitN(title, "<!--", 2)[0]) == name {
			return body
		}
	}
	return ""
}

func tokensOf(s string) []string {
	out := []string{}
	for _, tok := range orderTokenRE.FindAllString(s, -1) {
		if !slices.Contains(out, tok) {
			out = append(out, tok)
		}
	}
	return out
}

// check refreshes every head and compares every view with the model.
func (w *orderWorld) check(step string) {
	t := w.t
	t.Helper()
	if _, err := heads.Refresh(w.v, heads.RefreshOptions{Memory: true, AllThreads: true}); err != nil {
		t.Fatalf("%s: refresh: %v", step, err)
	}
	w.cont("", func(*continuity.ContinuityTx) error { return nil })
	same := func(view string, got, want []string, doc string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %s shows %v, want %v\n%s", step, view, got, want, doc)
		}
	}

	mem := w.read(vault.MemoryHead)
	same("MEMORY.md Next actions", tokensOf(sectionOf(mem, "Next actions")), toks(w.next), mem)
	same("MEMORY.md Commitments", tokensOf(sectionOf(mem, "Commitments")), toks(w.commits), mem)
	same("MEMORY.md Blockers", tokensOf(sectionOf(mem, "Blockers")), toks(w.blockers), mem)

	cont := w.read(vault.ContinuityHead)
	same("CONTINUITY.md Next Actions", tokensOf(sectionOf(cont, continuity.SecNext)), toks(slices.Concat(w.next, w.commits)), cont)
	same("CONTINUITY.md Active Blockers", tokensOf(sectionOf(cont, continuity.SecBlockers)), toks(w.blockers), cont)
	same("CONTINUITY.md Current Task", tokensOf(sectionOf(cont, continuity.SecTask)), toks(w.next[:min(1, len(w.next))]), cont)

	for _, key := range orderThreads[1:] {
		th, _ := vault.ParseThread(key)
		doc := w.read(th.HeadPath().String())
		next := inThread(w.next, key)
		if doc != "" {
			same(key+" Next action", tokensOf(sectionOf(doc, "Next action")), toks(next), doc)
			loops := slices.Concat(inThread(w.commits, key), inThread(w.blockers, key))
			slices.SortFunc(loops, func(a, b openItem) int { return a.seq - b.seq })
			same(key+" Open loops", tokensOf(sectionOf(doc, "Open loops")), toks(loops), doc)
		}
		// MEMORY.md's line of the thread names its first next action.
		for _, l := range strings.Split(sectionOf(mem, "Threads"), "\n") {
			if strings.HasPrefix(l, "- "+key+":") {
				_, after, _ := strings.Cut(l, "; next: ")
				same("MEMORY.md's line of "+key, tokensOf(after), toks(next[:min(1, len(next))]), mem)
			}
		}
	}

	// What a session starts with, without a thread and in each thread:
	// every open item of its thread and of no thread, none of another
	// thread's (scoped injection, context_scope.go), nothing closed, and
	// the next actions in queue order (the session's thread's first, as
	// its head comes first).
	for _, key := range orderThreads {
		ctx := StartContext(w.v, w.v.Config.Agent, key, "", 1<<20)
		shown := tokensOf(ctx)
		for _, it := range w.all() {
			inScope := it.thread == "" || it.thread == key
			if inScope && !slices.Contains(shown, it.tok) {
				t.Fatalf("%s: the start context (thread %q) lacks open %s %s\n%s", step, key, it.kind, it.tok, ctx)
			}
			if !inScope && slices.Contains(shown, it.tok) {
				t.Fatalf("%s: the start context (thread %q) shows %s %s of thread %q\n%s", step, key, it.kind, it.tok, it.thread, ctx)
			}
		}
		for _, tok := range w.closed {
			if slices.Contains(shown, tok) {
				t.Fatalf("%s: the start context (thread %q) shows %s, which was closed\n%s", step, key, tok, ctx)
			}
		}
		mine := toks(inThread(w.next, key))
		want := mine
		if key != "" {
			want = append(mine, toks(inThread(w.next, ""))...)
		}
		var got []string
		for _, tok := range shown {
			if slices.Contains(want, tok) {
				got = append(got, tok)
			}
		}
		same(fmt.Sprintf("the start context's next actions (thread %q)", key), got, want, ctx)
	}
}

func (w *orderWorld) read(rel string) string {
	data, err := os.ReadFile(w.v.Abs(vault.MustRel(rel)))
	if err != nil && !os.IsNotExist(err) {
		w.t.Fatal(err)
	}
	return string(data)
}
