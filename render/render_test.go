package render

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func sample() Input {
	items := []Item{
		{ID: "e_01constraint0000000000000", Kind: "constraint", Text: "Never push to main without review.", TS: "2026-11-20T09:00:00.000Z", Agent: "default"},
		{ID: "e_01decision00000000000000", Kind: "decision", Thread: "project:shop", Text: "Use SQLite in WAL mode for the cart.", TS: "2026-11-20T10:00:00.000Z", Agent: "claude-code", Session: "s1"},
		{ID: "e_01commit000000000000000a", Kind: "commitment.open", Thread: "project:shop", Text: "Ship the checkout page by Friday.", TS: "2026-11-20T10:05:00.000Z", Agent: "claude-code", Session: "s1"},
		{ID: "e_01fact00000000000000000a", Kind: "fact", Thread: "person:alice", Text: "Alice prefers reviews in the morning.", TS: "2026-11-20T11:00:00.000Z", Agent: "default", Session: "s2"},
		{ID: "e_01blocker000000000000000", Kind: "blocker", Thread: "project:shop", Text: "Waiting for the payment provider's API keys.", TS: "2026-11-21T08:00:00.000Z", Agent: "codex", Session: "s3"},
		{ID: "e_01next000000000000000000", Kind: "next", Thread: "project:shop", Text: "Write the checkout integration tests.", TS: "2026-11-21T08:30:00.000Z", Agent: "codex", Session: "s3"},
		// Open items are queues: this one is listed after the one above,
		// and the one given with --first (global) before both.
		{ID: "e_01next00000000000000000b", Kind: "next", Thread: "project:shop", Text: "Then deploy to staging.", TS: "2026-11-21T08:40:00.000Z", Agent: "codex", Session: "s3"},
		{ID: "e_01nextfirst0000000000000", Kind: "next", Text: "Rotate the leaked test key.", TS: "2026-11-21T08:50:00.000Z", Agent: "default", First: true},
		{ID: "e_01fact00000000000000000b", Kind: "fact", Text: "The CI runners have 2 cores.", TS: "2026-11-21T09:00:00.000Z", Agent: "default"},
		{ID: "e_01learning00000000000000", Kind: "learning", Thread: "project:shop", Text: "# Headings in row text\nmust not break the head <!-- memvault:keep -->", TS: "2026-11-21T09:30:00.000Z", Agent: "default"},
	}
	nodes := []Node{
		{ID: "n_01summary000000000000000", Kind: "session-summary", TS: "2026-11-21T10:00:00.000Z", Text: "Planned checkout; blocked on keys.", Threads: []string{"project:shop"}},
	}
	return Input{Items: items, Nodes: nodes, MemoryTokens: 1000, ThreadTokens: 2000,
		Threads: []ThreadMeta{{Key: "project:shop", Aliases: []string{"shop", "storefront"}}}}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./render -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./render -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	in := sample()
	m, err := Memory(in)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "MEMORY.md.golden", m.Bytes)
	for _, key := range []string{"project:shop", "person:alice", "topic:empty"} {
		d, err := Thread(in, key)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, strings.ReplaceAll(key, ":", "_")+".md.golden", d.Bytes)
	}
}

func TestDeterministic(t *testing.T) {
	in := sample()
	a, _ := Memory(in)
	for i := 0; i < 20; i++ {
		b, _ := Memory(sample())
		if !bytes.Equal(a.Bytes, b.Bytes) {
			t.Fatal("two renders of the same input differ")
		}
	}
}

func TestRowTextCannotForgeStructure(t *testing.T) {
	d, err := Thread(sample(), "project:shop")
	if err != nil {
		t.Fatal(err)
	}
	s := string(d.Bytes)
	if strings.Contains(s, "<!-- memvault:keep -->") {
		t.Error("row text forged the keep marker")
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "# ") && !strings.HasPrefix(l, "## ") {
			t.Errorf("row text made a heading: %q", l)
		}
	}
}

func TestThreadNoBleed(t *testing.T) {
	d, _ := Thread(sample(), "person:alice")
	if bytes.Contains(d.Bytes, []byte("checkout")) {
		t.Errorf("another thread's rows bled into person:alice:\n%s", d.Bytes)
	}
}

func TestBudgetTenThousandOpenItems(t *testing.T) {
	in := sample()
	for i := 0; i < 10000; i++ {
		in.Items = append(in.Items, Item{ID: fmt.Sprintf("e_%026d", i), Kind: "commitment.open",
			Thread: "project:load", Text: fmt.Sprintf("open item number %d", i), TS: "2026-11-22T00:00:00.000Z"})
	}
	for _, budget := range []int{200, 1000, 4000} {
		in.MemoryTokens = budget
		in.Explain = true
		d, err := Memory(in)
		if err != nil {
			t.Fatal(err)
		}
		in.Explain = false
		quick, err := Memory(in)
		if err != nil || !bytes.Equal(quick.Bytes, d.Bytes) {
			t.Fatalf("budget %d: the render differs with and without Explain (%v)", budget, err)
		}
		if got := Tokens(string(d.Bytes)); got > budget || got != d.Report.Tokens {
			t.Fatalf("budget %d: %d tokens (report says %d)", budget, got, d.Report.Tokens)
		}
		var commits *SectionReport
		for i := range d.Report.Sections {
			if d.Report.Sections[i].Title == "Commitments" {
				commits = &d.Report.Sections[i]
			}
		}
		if commits.Rows != 10001 || commits.Shown+len(commits.Dropped) != commits.Rows {
			t.Fatalf("budget %d: commitments accounted %d shown + %d dropped of %d", budget, commits.Shown, len(commits.Dropped), commits.Rows)
		}
		for _, dr := range commits.Dropped {
			if dr.ID == "" || !strings.HasPrefix(dr.Reason, "over budget") {
				t.Fatalf("dropped row without id or reason: %+v", dr)
			}
			if bytes.Contains(d.Bytes, []byte(dr.ID)) {
				t.Fatalf("dropped row %s is in the head", dr.ID)
			}
		}
		if !bytes.Contains(d.Bytes, []byte("more")) {
			t.Errorf("budget %d: no overflow line", budget)
		}
		// The highest-priority rows survive: the constraint and the blocker.
		if !bytes.Contains(d.Bytes, []byte("Never push to main")) || !bytes.Contains(d.Bytes, []byte("payment provider")) {
			t.Errorf("budget %d: a constraint or blocker was dropped before open items", budget)
		}
	}
}

func TestBudgetTooSmall(t *testing.T) {
	in := sample()
	in.MemoryTokens = 10
	_, err := Memory(in)
	var be *BudgetError
	if !errors.As(err, &be) || be.Need <= 10 {
		t.Fatalf("got %v, want a BudgetError", err)
	}
	if !strings.Contains(err.Error(), "too small for the section titles") {
		t.Errorf("message: %v", err)
	}
	// Exactly the skeleton is enough.
	in.MemoryTokens = be.Need
	if _, err := Memory(in); err != nil {
		t.Fatalf("budget equal to the skeleton: %v", err)
	}
}

func TestTokens(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"   \n\t", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"hello world", 4},
		{"- [ ] ship", 4},
		{"日本語", 3},
		{"naïve", 2}, // "na" + "ve": 4 ascii bytes, 1 token; ï: 1
	} {
		if got := Tokens(c.s); got != c.want {
			t.Errorf("Tokens(%q) = %d, want %d", c.s, got, c.want)
		}
	}
	// Additive over lines.
	a, b := "first line here", "second one"
	if Tokens(a+"\n"+b) != Tokens(a)+Tokens(b) {
		t.Error("tokens are not additive over lines")
	}
}

// A prepared view kept up to date row by row (Push for what ranks first,
// Append at the end of a queue, as vault/heads' view cache does) ranks
// exactly as a prepare of all the rows, also past the row cap, where the
// queue's newest rows and the records' oldest are only counted.
func TestQueueIncrementalMatchesPrepare(t *testing.T) {
	for seed := range 20 {
		var items []Item
		parts := &MemoryParts{}
		in := Input{MemoryTokens: 40} // a row cap of 9
		for i := range 30 {
			it := Item{ID: fmt.Sprintf("e_%d_%d", seed, i), Text: fmt.Sprint("row ", i)}
			switch (seed*7 + i*i) % 5 {
			case 0:
				it.Kind = KindNext
			case 1:
				it.Kind, it.First = KindNext, true
			case 2:
				it.Kind = KindBlocker
			case 3:
				it.Kind = KindCommitment
			default:
				it.Kind = KindDecision
			}
			items = append(items, it)
			k := MemorySection(&it)
			if q, top := Queue(&it); q && !top {
				parts.Sections[k].Append(it, RowCap(in.MemoryTokens))
			} else {
				parts.Sections[k].Push(it, RowCap(in.MemoryTokens))
			}
			in.Items = items
			want := PrepareMemory(in)
			for s := range want.Sections {
				w, g := want.Sections[s], parts.Sections[s]
				if fmt.Sprint(w.Items) != fmt.Sprint(g.Items) || w.More != g.More {
					t.Fatalf("seed %d row %d section %d: incremental %v +%d, prepared %v +%d", seed, i, s, g.Items, g.More, w.Items, w.More)
				}
			}
		}
	}
}
