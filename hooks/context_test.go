package hooks

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
)

// renderedHeads renders MEMORY.md and the head of project:shop the way the vault
// does, from the same rows: a blocker, a next action and a decision of the
// thread, and a global constraint.
func renderedHeads(t *testing.T) (memory, thread string) {
	t.Helper()
	in := render.Input{MemoryTokens: 1000, ThreadTokens: 2000, Items: []render.Item{
		{ID: "e_01m0000000000000000000blk1", Kind: "blocker", Thread: "project:shop", Text: "staging database is down", TS: "2026-11-23T10:00:00Z"},
		{ID: "e_01m0000000000000000000nxt1", Kind: "next", Thread: "project:shop", Text: "Migrate the orders table to v2", TS: "2026-11-23T10:01:00Z"},
		{ID: "e_01m0000000000000000000dec1", Kind: "decision", Thread: "project:shop", Text: "retry webhooks 5 times", TS: "2026-11-23T10:02:00Z"},
		{ID: "e_01m0000000000000000000con1", Kind: "constraint", Text: "never deploy on Fridays", TS: "2026-11-23T10:03:00Z"},
	}}
	m, err := render.Memory(in)
	if err != nil {
		t.Fatal(err)
	}
	th, err := render.Thread(in, "project:shop")
	if err != nil {
		t.Fatal(err)
	}
	return string(m.Bytes), string(th.Bytes)
}

// continuityDoc is CONTINUITY.md as vault/continuity/continuity_render.go writes it
// for the same next action and blocker, with a goal, a hand-written line
// and a person's comment over two lines.
const continuityDoc = `# CONTINUITY

<!-- memvault: working memory, rendered from the ledger; hand edits are merged, not lost. See docs/CONTINUITY.md. -->

Last Updated: 2026-11-23
Current Phase: planning
Current Iteration: 0

## Active Goal

ship the orders migration

## Current Task

- migrate the orders table to v2 (since 2026-11-23)

## Just Completed

- none

## Next Actions

1. migrate the orders table to v2
2. Tell support about the window
<!-- a person's note
over two lines -->

## Active Blockers

- staging database is down (` + "`e_01m0000000000000000000blk1`" + `)

## Key Decisions

- none
`

func assemble(t *testing.T, limit int) string {
	memory, thread := renderedHeads(t)
	th := parseHead(thread)
	th.ids = []string{threadRowID("project:shop")}
	blocks := []block{noteBlock(UsageNote), th, liveContinuity(parseHead(continuityDoc)), parseHead(memory)}
	return layoutBlocks(dedupe(blocks), limit, startCutNote)
}

// Each row once, whichever pieces name it; no comments, no empty
// sections, no lines meant for people.
func TestStartContextIsSingle(t *testing.T) {
	got := assemble(t, 9500)
	for _, text := range []string{"igrate the orders table to v2", "staging database is down", "retry webhooks 5 times",
		"never deploy on Fridays", "ship the orders migration", "Tell support about the window"} {
		if n := strings.Count(got, text); n != 1 {
			t.Errorf("%q appears %d times, want once:\n%s", text, n, got)
		}
	}
	for _, noise := range []string{"<!--", "-->", "- none", "## Just Completed", "## Key Decisions", "## Commitments",
		"## Notes", "memvault render --explain", "every row of this thread", "over two lines", "→ threads/project/shop.md"} {
		if strings.Contains(got, noise) {
			t.Errorf("context holds %q:\n%s", noise, got)
		}
	}
	// Most relevant first: the note, the thread head, then CONTINUITY.md,
	// then MEMORY.md (whose only row left is the global constraint).
	order := []string{"memvault: this project has a memory", "# project:shop", "# CONTINUITY (live sections)", "# MEMORY", "never deploy on Fridays"}
	at := -1
	for _, s := range order {
		i := strings.Index(got, s)
		if i <= at {
			t.Fatalf("%q is not after %q:\n%s", s, order, got)
		}
		at = i
	}
	// CONTINUITY.md keeps its own numbering: DONE: 2 still names the second.
	if !strings.Contains(got, "\n2. Tell support about the window") {
		t.Errorf("next action 2 lost its number:\n%s", got)
	}
}

// A fresh vault's heads and CONTINUITY.md hold nothing but skeleton:
// parsed, they have no rows at all.
func TestFreshHeadsHaveNoRows(t *testing.T) {
	v, _, err := vault.Init(filepath.Join(t.TempDir(), vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	empty := render.Input{MemoryTokens: 1000, ThreadTokens: 2000}
	m, err := render.Memory(empty)
	if err != nil {
		t.Fatal(err)
	}
	th, err := render.Thread(empty, "project:shop")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{"render.Memory": string(m.Bytes), "render.Thread": string(th.Bytes)}
	c, err := continuity.RenderContinuity(v)
	if err != nil {
		t.Fatal(err)
	}
	docs["CONTINUITY.md"] = string(c.Bytes)
	for name, doc := range docs {
		b := parseHead(doc)
		if name == "CONTINUITY.md" {
			b = liveContinuity(b)
		}
		if hasRows([]block{b}) {
			t.Errorf("%s: rows in an empty head: %+v", name, b.sections)
		}
		if got := layoutBlocks(dedupe([]block{b}), 9500, startCutNote); got != "" {
			t.Errorf("%s: an empty head injects %q", name, got)
		}
	}
}

func TestRowKeyAndID(t *testing.T) {
	cases := []struct{ line, key, id string }{
		{"- Migrate the  orders table (project:shop, `e_01m855270b4wzdcgaspn0d45nv`)", "migrate the orders table", "e_01m855270b4wzdcgaspn0d45nv"},
		{"- blocker: staging is down (`e_01m855270b4wzdcgaspn0d45nv`)", "staging is down", "e_01m855270b4wzdcgaspn0d45nv"},
		{"- [ ] send the invoice (`e_01m855270b4wzdcgaspn0d45nv`)", "send the invoice", "e_01m855270b4wzdcgaspn0d45nv"},
		{"- migrate the orders table (since 2026-11-23)", "migrate the orders table", ""},
		{"12. migrate the orders table", "migrate the orders table", ""},
		{"- `n_01m7shy2d0g4fsenhzntaer0yz` session-summary, 2026-11-22: did x", "`n_01m7shy2d0g4fsenhzntaer0yz` session-summary, 2026-11-22: did x", "n_01m7shy2d0g4fsenhzntaer0yz"},
		// an id named in the text is not the row's own
		{"- supersedes `e_01m855270b4wzdcgaspn0d45nv` for now", "supersedes `e_01m855270b4wzdcgaspn0d45nv` for now", ""},
		{"a hand-written line (see `notes.md`)", "a hand-written line", ""},
	}
	for _, c := range cases {
		if got := rowKey(c.line); got != c.key {
			t.Errorf("rowKey(%q) = %q, want %q", c.line, got, c.key)
		}
		if got := rowID(c.line); got != c.id {
			t.Errorf("rowID(%q) = %q, want %q", c.line, got, c.id)
		}
	}
}

// Comments go, over lines and within one; a fenced block is one row, kept
// as written, comments and all.
func TestParseHeadCommentsAndFences(t *testing.T) {
	b := parseHead("# T\n\n## A <!-- memvault:keep -->\n\nkeep <!-- gone --> this\n<!-- gone\nstill gone --> and this\n```\n<!-- code -->\n- none\n```\n\n## B\n\n- none\n")
	if len(b.sections) != 2 || b.sections[0].heading != "## A" || b.sections[1].heading != "## B" || len(b.sections[1].rows) != 0 {
		t.Fatalf("sections: %+v", b.sections)
	}
	var texts []string
	for _, r := range b.sections[0].rows {
		texts = append(texts, r.text)
	}
	want := []string{"keep  this", " and this", "```\n<!-- code -->\n- none\n```"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("rows %q, want %q", texts, want)
	}
}

// Cut from the end, whole rows, with one line saying how many and where
// they are; never over the limit.
func TestStartContextCut(t *testing.T) {
	full := assemble(t, 1<<20)
	for limit := 150; limit < len(full); limit += 37 {
		got := assemble(t, limit)
		if len(got) > limit {
			t.Fatalf("limit %d: %d bytes", limit, len(got))
		}
		if got == "" {
			continue
		}
		last := got[strings.LastIndex(got, "\n")+1:]
		if !strings.HasPrefix(last, "[memvault: ") || !strings.Contains(last, "`memvault recall QUERY`") ||
			!strings.Contains(last, "`memvault continuity status`") || !strings.Contains(last, fmt.Sprintf("within %d characters", limit)) {
			t.Fatalf("limit %d: last line %q", limit, last)
		}
		body := strings.TrimSuffix(strings.TrimSuffix(got, last), "\n\n")
		if !strings.HasPrefix(full, body) {
			t.Fatalf("limit %d: not a prefix of the whole:\n%s", limit, got)
		}
		if rest := full[len(body):]; body != "" && rest != "" && rest[0] != '\n' {
			t.Fatalf("limit %d: cut mid-row:\n%s", limit, got)
		}
	}
	if got := assemble(t, len(full)); got != full {
		t.Fatalf("a context that fits is cut")
	}
	if got := assemble(t, 20); got != "" {
		t.Fatalf("a limit below the cut line: %q", got)
	}
}

// For random pieces, with repeats within and across them: the context
// stays within the budget, holds no row twice, cuts no row, keeps rows in
// their order, and drops rows only as repeats or from the end.
func TestLayoutProperties(t *testing.T) {
	words := []string{"orders", "Orders", "table", "migrate", "staging", "down", "retry", "  webhooks", "v2", "the"}
	for seed := uint64(0); seed < 500; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var blocks []block
		var all []row
		for range 1 + r.IntN(5) {
			b := block{}
			if r.IntN(2) == 0 {
				b.title = fmt.Sprintf("# piece %d", len(blocks))
			}
			for range r.IntN(4) {
				s := section{}
				if r.IntN(3) > 0 {
					s.heading = fmt.Sprintf("## section %d", r.IntN(3))
				}
				for range r.IntN(6) {
					var text string
					for range 1 + r.IntN(6) {
						text += words[r.IntN(len(words))] + " "
					}
					text = "- " + strings.TrimSpace(text)
					var rw row
					if r.IntN(2) == 0 {
						id := fmt.Sprintf("e_%012d", r.IntN(8))
						rw = parseRow(text + " (`" + id + "`)")
					} else {
						rw = parseRow(text)
					}
					s.rows = append(s.rows, rw)
					all = append(all, rw)
				}
				b.sections = append(b.sections, s)
			}
			blocks = append(blocks, b)
		}
		limit := 60 + r.IntN(600)
		got, shownIDs := layoutShown(dedupe(blocks), limit, startCutNote)
		if len(got) > limit {
			t.Fatalf("seed %d: %d bytes over a limit of %d", seed, len(got), limit)
		}
		// Every line is a title, a heading, the cut line or a whole row,
		// and no row's id or key is there twice.
		whole := map[string]row{}
		for _, rw := range all {
			whole[rw.text] = rw
		}
		seenID, seenKey := map[string]bool{}, map[string]bool{}
		var kept []string
		for _, line := range strings.Split(got, "\n") {
			if line == "" || strings.HasPrefix(line, "# piece ") || strings.HasPrefix(line, "## section ") || strings.HasPrefix(line, "[memvault: ") {
				continue
			}
			rw, ok := whole[line]
			if !ok {
				t.Fatalf("seed %d: %q is not a whole row:\n%s", seed, line, got)
			}
			for _, id := range rw.ids {
				if seenID[id] {
					t.Fatalf("seed %d: id %s twice:\n%s", seed, id, got)
				}
				seenID[id] = true
			}
			if seenKey[rw.key] {
				t.Fatalf("seed %d: %q twice:\n%s", seed, rw.key, got)
			}
			seenKey[rw.key] = true
			kept = append(kept, line)
		}
		// What is kept is the start of the rows left after dedupe.
		var single []string
		for _, b := range dedupe(blocks) {
			for _, s := range b.sections {
				for _, rw := range s.rows {
					single = append(single, rw.text)
				}
			}
		}
		if len(kept) > len(single) || strings.Join(kept, "\n") != strings.Join(single[:len(kept)], "\n") {
			t.Fatalf("seed %d: kept %q, not a prefix of %q", seed, kept, single)
		}
		// The ids it says it showed are exactly those of the kept rows:
		// what a session's prompts then leave out.
		if !slices.Equal(slices.Sorted(maps.Keys(seenID)), slices.Sorted(slices.Values(shownIDs))) {
			t.Fatalf("seed %d: shown ids %v, kept rows hold %v:\n%s", seed, shownIDs, slices.Sorted(maps.Keys(seenID)), got)
		}
		if cut := strings.Contains(got, "[memvault: "); cut != (len(kept) < len(single)) && got != "" {
			t.Fatalf("seed %d: cut line %v with %d of %d rows:\n%s", seed, cut, len(kept), len(single), got)
		}
	}
}

// A head's "… N more" stays with a section that keeps a row, and goes
// with one whose rows were all shown before.
func TestMoreLineGoesWithItsSection(t *testing.T) {
	memory := parseHead("# MEMORY\n\n## Blockers\n\n- down (`e_01m0000000000000000000blk1`)\n- … 7 more\n\n## Next actions\n\n- ship it (`e_01m0000000000000000000nxt1`)\n- … 3 more\n")
	first := parseHead("# t\n\n## Open loops\n\n- blocker: down (`e_01m0000000000000000000blk1`)\n")
	got := layoutBlocks(dedupe([]block{first, memory}), 9500, startCutNote)
	want := "# t\n\n## Open loops\n- blocker: down (`e_01m0000000000000000000blk1`)\n\n# MEMORY\n\n## Next actions\n- ship it (`e_01m0000000000000000000nxt1`)\n- … 3 more"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
