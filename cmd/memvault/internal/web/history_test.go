package web

import (
	"os"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/testvault"
)

// TestHeadHistoryShowsWhatChanged: a head's history is what each version
// changed in the memory: the row a render added (under its section, its
// id a link) and the one it dropped; a commit that changed only what is
// not memory (a comment, blank lines, the order of two lines) is left out
// and counted, listed with ?history=all; no raw Markdown heading and no
// backticked id shows in it.
func TestHeadHistoryShowsWhatChanged(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	render := func() {
		t.Helper()
		if _, err := heads.Refresh(v, heads.RefreshOptions{Trigger: "render", Memory: true}); err != nil {
			t.Fatal(err)
		}
	}
	first := testvault.Remember(t, v, "zqfirst the queue is Postgres")
	render()
	second := testvault.Remember(t, v, "zqsecond retries back off")
	render()
	// A hand commit that changes nothing of the memory: a comment, blank
	// lines and two lines swapped.
	path := v.Abs(vault.MustRel(vault.MemoryHead))
	text := testvault.ReadHead(t, v, vault.MemoryHead)
	lines := strings.Split(text, "\n")
	var a, b int = -1, -1
	for i, l := range lines {
		if strings.Contains(l, "zqfirst") {
			a = i
		}
		if strings.Contains(l, "zqsecond") {
			b = i
		}
	}
	if a < 0 || b < 0 {
		t.Fatalf("MEMORY.md does not hold both rows:\n%s", text)
	}
	lines[a], lines[b] = lines[b], lines[a]
	noisy := strings.Join(lines, "\n") + "\n\n<!-- a note of nobody's -->\n\n"
	if err := os.WriteFile(path, []byte(noisy), 0o644); err != nil {
		t.Fatal(err)
	}
	testvault.CommitAsIs(t, v, path)
	noiseCommit := testvault.LastSubject(t, v) // "cut by hand"
	f := serve(t, v, false)
	body := f.page("/heads/MEMORY.md", "head")
	hist := between(body, `<ol class="history" id="history-list">`, `</ol>`)
	if hist == "" {
		t.Fatalf("no history list:\n%s", body)
	}
	for _, want := range []string{`<li class="add"><span class="sign">+</span> <span class="section">Notes</span> zqsecond retries back off`,
		`href="/timeline?at=` + second.ID + `"`, `href="/timeline?at=` + first.ID + `"`, "+1", "full diff"} {
		if !strings.Contains(hist, want) {
			t.Errorf("the history does not hold %s:\n%s", want, hist)
		}
	}
	for _, bad := range []string{"## ", "`e_", noiseCommit, "a note of nobody"} {
		if strings.Contains(hist, bad) {
			t.Errorf("the history holds %q:\n%s", bad, hist)
		}
	}
	if n := strings.Count(hist, `<li class="version`); n != 2 {
		t.Errorf("the history lists %d versions, want the 2 renders (the hand commit changed no memory):\n%s", n, hist)
	}
	if !strings.Contains(body, `id="history-noise"`) || !strings.Contains(body, "1 render(s) that changed nothing") {
		t.Errorf("the page does not say a version was left out:\n%s", body)
	}
	all := between(f.page("/heads/MEMORY.md?history=all", "head"), `<ol class="history" id="history-list">`, `</ol>`)
	if n := strings.Count(all, `<li class="version`); n != 3 || !strings.Contains(all, "no change to the memory") {
		t.Errorf("?history=all lists %d versions, want 3, the hand commit marked:\n%s", n, all)
	}
	if c := change("add", item{"Drill down", "- `n_01m8km5aq8h8jabcdefghjkmnp` condensed, 2 nodes"}); c.Text != "condensed, 2 nodes" || c.ID != "n_01m8km5aq8h8jabcdefghjkmnp" {
		t.Errorf("a drill-down line: %+v", c)
	}
	// A removed row is a removed line.
	if got, _ := changesBetween([]item{{"Notes", "- a"}, {"Notes", "- b"}, {"Notes", "- b"}}, []item{{"Notes", "- b"}, {"Notes", "- c"}}); len(got) != 1 || got[0].Line != "- c" {
		t.Errorf("added: %v", got)
	}
	if _, got := changesBetween([]item{{"Notes", "- a"}, {"Notes", "- b"}, {"Notes", "- b"}}, []item{{"Notes", "- b"}, {"Notes", "- c"}}); len(got) != 2 || got[0].Line != "- a" || got[1].Line != "- b" {
		t.Errorf("removed: %v", got)
	}
}
