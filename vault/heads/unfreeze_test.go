package heads

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

// editHead rewrites a head as a person's editor would, failing when the
// text to replace is not there (a test that edits nothing tests nothing).
func editHead(t *testing.T, v *vault.Vault, head, old, new string) {
	t.Helper()
	p := v.Abs(vault.MustRel(head))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s lacks %q:\n%s", head, old, data)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// rowLine is the line of a head holding text, or "".
func rowLine(doc, text string) string {
	for _, l := range strings.Split(doc, "\n") {
		if strings.Contains(l, text) {
			return l
		}
	}
	return ""
}

// openConflicts is what status lists: the head.conflict events of head
// not resolved.
func openConflicts(t *testing.T, v *vault.Vault, head string) []HeadEvent {
	t.Helper()
	st, _, err := FoldedState(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range HeadStatesOf(v, st) {
		if h.Head == head {
			return h.Conflicts
		}
	}
	return nil
}

func supersede(t *testing.T, v *vault.Vault, text, with string) {
	t.Helper()
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, r := range st.Rows {
		if r.Event.Text == text {
			id = r.Event.ID
		}
	}
	if _, err := v.Update(vault.TxOptions{Session: "s-fix"}, func(tx *vault.Tx) error {
		_, err := memory.Supersede(tx, id, with)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestConflictNeverFreezesASection is issue 34's freeze: a person rewrote a
// decision in MEMORY.md, then the decision was superseded (the render
// changed the same row: a conflict). The person's text stays; the
// superseding decision, and every decision recorded afterwards, appear
// beside it; the conflict is recorded once and stands until resolved; a
// second, different conflict is recorded too; and a person who takes
// their line out by hand settles the conflict it made.
func TestConflictNeverFreezesASection(t *testing.T) {
	v := testvault.New(t)
	rememberIn(t, v, "decision", "", "s1", "use WAL for the ledger")
	refresh(t, v, "s1")
	mem := vault.MemoryHead
	line := rowLine(readHead(t, v, mem), "use WAL for the ledger")
	mine := strings.Replace(line, "use WAL for the ledger", "use WAL for the ledger, with a 64 MiB cap (agreed with ops)", 1)
	editHead(t, v, mem, line, mine)

	supersede(t, v, "use WAL for the ledger", "use WAL for the ledger and the index")
	rep := refresh(t, v, "s2")
	if s := status(rep, mem); s != "conflict" {
		t.Fatalf("refresh after the supersede: %s, want conflict", s)
	}
	got := readHead(t, v, mem)
	for _, want := range []string{mine, "use WAL for the ledger and the index"} {
		if !strings.Contains(got, want) {
			t.Errorf("after the conflict MEMORY.md lacks %q:\n%s", want, got)
		}
	}

	// Later decisions come in; the conflict is not recorded again.
	for i, d := range []string{"keep parts under 256 KiB", "index transcripts by session"} {
		rememberIn(t, v, "decision", "", "s3", d)
		rep = refresh(t, v, "s3")
		got = readHead(t, v, mem)
		if !strings.Contains(got, d) || !strings.Contains(got, mine) {
			t.Fatalf("refresh %d: MEMORY.md lacks the new decision %q or the person's line:\n%s", i, d, got)
		}
		if s := status(rep, mem); s == "conflict" {
			t.Errorf("refresh %d reported the standing conflict again", i)
		}
		if n := len(openConflicts(t, v, mem)); n != 1 {
			t.Errorf("refresh %d: %d open conflicts, want the one", i, n)
		}
	}
	if n := testvault.Kinds(t, v)[vault.KindHeadConflict]; n != 1 {
		t.Errorf("%d head.conflict events, want 1", n)
	}
	// What a session is injected: the current heads (hooks/context.go).
	cur, err := CurrentHeads(v, mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(cur) != 1 || !strings.Contains(string(cur[0]), "index transcripts by session") || !strings.Contains(string(cur[0]), mine) {
		t.Errorf("current MEMORY.md: %q", cur)
	}

	// A different conflict in the same head is recorded.
	line2 := rowLine(got, "keep parts under 256 KiB")
	mine2 := strings.Replace(line2, "keep parts under 256 KiB", "keep parts under 256 KiB (1 MiB for archives)", 1)
	editHead(t, v, mem, line2, mine2)
	supersede(t, v, "keep parts under 256 KiB", "keep parts under 512 KiB")
	if s := status(refresh(t, v, "s4"), mem); s != "conflict" {
		t.Errorf("a new conflict: %s, want conflict", s)
	}
	if n := len(openConflicts(t, v, mem)); n != 2 {
		t.Fatalf("%d open conflicts, want 2", n)
	}
	got = readHead(t, v, mem)
	if !strings.Contains(got, mine2) || !strings.Contains(got, "keep parts under 512 KiB") || !strings.Contains(got, mine) {
		t.Errorf("after the second conflict:\n%s", got)
	}

	// The person takes their first line out by hand: that conflict is
	// settled at the next refresh, the second stands.
	editHead(t, v, mem, mine+"\n", "")
	rememberIn(t, v, "decision", "", "s5", "ship on Fridays")
	refresh(t, v, "s5")
	open := openConflicts(t, v, mem)
	if len(open) != 1 || !strings.Contains(string(open[0].Data), "1 MiB for archives") {
		t.Errorf("after the person took their line out: %d open conflicts %+v, want the second", len(open), open)
	}
	if _, err := ResolveHeads(v, mem, "ours", vault.TxOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(openConflicts(t, v, mem)); n != 0 {
		t.Errorf("%d open conflicts after resolve", n)
	}
	got = readHead(t, v, mem)
	if !strings.Contains(got, mine2) || !strings.Contains(got, "ship on Fridays") || strings.Contains(got, mine) {
		t.Errorf("at the end:\n%s", got)
	}
	if regexp.MustCompile(`(?m)^(<<<<<<<|=======|>>>>>>>)`).MatchString(got) {
		t.Errorf("conflict markers:\n%s", got)
	}
}

// decisionsOf is the text of MEMORY.md's Decisions section, or "".
func decisionsOf(doc string) string {
	i := strings.Index(doc, "## Decisions")
	if i < 0 {
		return ""
	}
	rest := doc[i:]
	if j := strings.Index(rest[3:], "\n## "); j >= 0 {
		return rest[:j+4]
	}
	return rest
}

// TestConflictAdversaries plays what a person may do to MEMORY.md's
// Decisions while the render changes the same rows (a supersede) and adds
// new ones, and checks what each must get.
func TestConflictAdversaries(t *testing.T) {
	mem := vault.MemoryHead
	// setup: two decisions rendered; the person edits; then the first is
	// superseded (the same row as the person's rewrite: a conflict) and a
	// new decision is recorded.
	type result struct {
		doc       string
		conflicts int
	}
	play := func(t *testing.T, edit func(t *testing.T, v *vault.Vault, doc string)) result {
		v := testvault.New(t)
		rememberIn(t, v, "decision", "", "s1", "use WAL for the ledger")
		rememberIn(t, v, "decision", "", "s1", "keep parts small")
		refresh(t, v, "s1")
		edit(t, v, readHead(t, v, mem))
		supersede(t, v, "use WAL for the ledger", "use WAL for the ledger and the index")
		refresh(t, v, "s2")
		rememberIn(t, v, "decision", "", "s3", "ship on Fridays")
		refresh(t, v, "s3")
		return result{readHead(t, v, mem), testvault.Kinds(t, v)[vault.KindHeadConflict]}
	}
	rewrite := func(t *testing.T, v *vault.Vault, doc string) {
		l := rowLine(doc, "use WAL for the ledger")
		editHead(t, v, mem, l, strings.Replace(l, "for the ledger", "for the ledger (mine)", 1))
	}
	for _, c := range []struct {
		name       string
		edit       func(t *testing.T, v *vault.Vault, doc string)
		has, lacks []string
		conflicts  int
		check      func(t *testing.T, doc string)
	}{{
		name: "a row the person deleted on purpose does not come back",
		edit: func(t *testing.T, v *vault.Vault, doc string) {
			rewrite(t, v, doc)
			editHead(t, v, mem, rowLine(doc, "keep parts small")+"\n", "")
		},
		has:       []string{"for the ledger (mine)", "use WAL for the ledger and the index", "ship on Fridays"},
		lacks:     []string{"keep parts small"},
		conflicts: 1,
	}, {
		name: "the person's own rows stay, once",
		edit: func(t *testing.T, v *vault.Vault, doc string) {
			rewrite(t, v, doc)
			l := rowLine(doc, "keep parts small")
			editHead(t, v, mem, l, l+"\n- my own rule: no Friday deploys")
		},
		has:       []string{"for the ledger (mine)", "use WAL for the ledger and the index", "ship on Fridays", "keep parts small", "- my own rule: no Friday deploys"},
		conflicts: 1,
		check: func(t *testing.T, doc string) {
			if n := strings.Count(doc, "my own rule"); n != 1 {
				t.Errorf("the person's row is there %d times", n)
			}
		},
	}, {
		name: "a file an editor turned CRLF keeps CRLF and gets the new rows",
		edit: func(t *testing.T, v *vault.Vault, doc string) {
			rewrite(t, v, doc)
			crlf := strings.ReplaceAll(readHead(t, v, mem), "\n", "\r\n")
			if err := os.WriteFile(v.Abs(vault.MustRel(mem)), []byte(crlf), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		has:       []string{"for the ledger (mine)", "use WAL for the ledger and the index", "ship on Fridays", "keep parts small"},
		conflicts: 1,
		check: func(t *testing.T, doc string) {
			if n := strings.Count(doc, "\n") - strings.Count(doc, "\r\n"); n != 0 {
				t.Errorf("%d lines end in a bare LF in a CRLF file:\n%q", n, doc)
			}
		},
	}, {
		name: "a section the person deleted comes back with the new rows only",
		edit: func(t *testing.T, v *vault.Vault, doc string) {
			editHead(t, v, mem, decisionsOf(doc), "")
		},
		has:   []string{"## Decisions", "use WAL for the ledger and the index", "ship on Fridays"},
		lacks: []string{"keep parts small"},
	}, {
		name: "a section the person renamed takes the new rows under their heading",
		edit: func(t *testing.T, v *vault.Vault, doc string) {
			editHead(t, v, mem, "## Decisions\n", "## What we decided\n")
		},
		has:   []string{"## What we decided", "use WAL for the ledger and the index", "ship on Fridays", "keep parts small"},
		lacks: []string{"## Decisions", "use WAL for the ledger ("},
	}, {
		name: "a pinned section is never rewritten",
		edit: func(t *testing.T, v *vault.Vault, doc string) {
			editHead(t, v, mem, "## Decisions\n", "## Decisions <!-- memvault:keep -->\n")
		},
		has:       []string{"use WAL for the ledger (", "keep parts small"},
		lacks:     []string{"use WAL for the ledger and the index", "ship on Fridays"},
		conflicts: 0,
	}} {
		t.Run(c.name, func(t *testing.T) {
			r := play(t, c.edit)
			for _, w := range c.has {
				if !strings.Contains(r.doc, w) {
					t.Errorf("MEMORY.md lacks %q:\n%s", w, r.doc)
				}
			}
			for _, w := range c.lacks {
				if strings.Contains(r.doc, w) {
					t.Errorf("MEMORY.md holds %q:\n%s", w, r.doc)
				}
			}
			if r.conflicts != c.conflicts {
				t.Errorf("%d head.conflict events, want %d", r.conflicts, c.conflicts)
			}
			if c.check != nil {
				c.check(t, r.doc)
			}
		})
	}
}

// TestStaleSaveThatConflicts: the person's editor loaded MEMORY.md, a
// render added a decision while they typed, and they saved a rewrite of a
// decision that was superseded meanwhile. Their save lacks the decision
// rendered after they loaded the file, which is no deletion of theirs: it
// stays in MEMORY.md, beside their rewrite and the superseding decision.
func TestStaleSaveThatConflicts(t *testing.T) {
	v := testvault.New(t)
	mem := vault.MemoryHead
	rememberIn(t, v, "decision", "", "s1", "use WAL for the ledger")
	refresh(t, v, "s1")
	buffer := readHead(t, v, mem) // the editor's buffer, from here on stale
	rememberIn(t, v, "decision", "", "s2", "keep parts small")
	refresh(t, v, "s2")
	l := rowLine(buffer, "use WAL for the ledger")
	saved := strings.Replace(buffer, l, strings.Replace(l, "for the ledger", "for the ledger (mine)", 1), 1)
	if err := os.WriteFile(v.Abs(vault.MustRel(mem)), []byte(saved), 0o600); err != nil {
		t.Fatal(err)
	}
	supersede(t, v, "use WAL for the ledger", "use WAL for the ledger and the index")
	refresh(t, v, "s3")
	got := readHead(t, v, mem)
	for _, w := range []string{"for the ledger (mine)", "use WAL for the ledger and the index", "keep parts small"} {
		if !strings.Contains(got, w) {
			t.Errorf("MEMORY.md lacks %q:\n%s", w, got)
		}
	}
	if n := testvault.Kinds(t, v)[vault.KindHeadConflict]; n != 1 {
		t.Errorf("%d head.conflict events, want 1 (the rewrite of a superseded decision)", n)
	}
}

// TestResolveTheirsTakesTheLastRender: a conflict stands while the render
// moves on; resolving it with the render's text takes the last render's
// section, not the one the conflict recorded (which lacks every decision
// recorded since).
func TestResolveTheirsTakesTheLastRender(t *testing.T) {
	v := testvault.New(t)
	mem := vault.MemoryHead
	rememberIn(t, v, "decision", "", "s1", "use WAL for the ledger")
	refresh(t, v, "s1")
	l := rowLine(readHead(t, v, mem), "use WAL for the ledger")
	editHead(t, v, mem, l, strings.Replace(l, "for the ledger", "for the ledger (mine)", 1))
	supersede(t, v, "use WAL for the ledger", "use WAL for the ledger and the index")
	refresh(t, v, "s2")
	rememberIn(t, v, "decision", "", "s3", "ship on Fridays")
	refresh(t, v, "s3")
	if _, err := ResolveHeads(v, mem, "theirs", vault.TxOptions{}); err != nil {
		t.Fatal(err)
	}
	got := readHead(t, v, mem)
	if !strings.Contains(got, "ship on Fridays") || !strings.Contains(got, "use WAL for the ledger and the index") || strings.Contains(got, "(mine)") {
		t.Errorf("after resolve --theirs:\n%s", got)
	}
	if got != testvault.ReadHead(t, v, vault.RenderedDir+"/"+mem) {
		t.Errorf("after resolve --theirs the head is not the last render:\n%s", got)
	}
}

// TestRewrittenThreadLineConflictsOnce: a person rewrote the Threads line
// of a thread in MEMORY.md, which the render rewrites at every write to
// that thread. Their line stands, one conflict is recorded, not one a
// write; the thread's new rows reach MEMORY.md all the same.
func TestRewrittenThreadLineConflictsOnce(t *testing.T) {
	v := testvault.New(t)
	mem := vault.MemoryHead
	rememberIn(t, v, "next", "project:shop", "s1", "write the tests")
	refresh(t, v, "s1")
	l := rowLine(readHead(t, v, mem), "→ threads/project/shop.md")
	if l == "" {
		t.Fatalf("no Threads line for project:shop:\n%s", readHead(t, v, mem))
	}
	mine := "- project:shop: the storefront, Bob's (mine) → threads/project/shop.md"
	editHead(t, v, mem, l, mine)
	for i, next := range []string{"the CI runner is down", "no keys from the provider", "staging is full"} {
		rememberIn(t, v, "blocker", "project:shop", "s2", next)
		refresh(t, v, "s2")
		got := readHead(t, v, mem)
		if !strings.Contains(got, mine) || !strings.Contains(got, next) {
			t.Fatalf("write %d: MEMORY.md lacks the person's line or %q:\n%s", i, next, got)
		}
		if strings.Count(got, "→ threads/project/shop.md") != 1 {
			t.Fatalf("write %d: the thread's line twice:\n%s", i, got)
		}
	}
	if n := testvault.Kinds(t, v)[vault.KindHeadConflict]; n != 1 {
		t.Errorf("%d head.conflict events, want 1", n)
	}
	if n := len(openConflicts(t, v, mem)); n != 1 {
		t.Errorf("%d open conflicts, want 1", n)
	}
}
