package web

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

// nextPage is the timeline's next-page link, unescaped; "" when none.
func nextPage(body string) string {
	m := regexp.MustCompile(`id="next-page" href="([^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// rowsOf lists the ids of the timeline's rows, in page order.
func rowsOf(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`<tr class="status-[a-z]+" id="(e_[0-9a-z]+)"`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// TestTimelinePages walks 250 events page by page: newest first, 100 a
// page, every event once, the last page without a next link; the filters
// keep only what they name, and the filters survive paging.
func TestTimelinePages(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	var ids []string
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		for i := range 250 {
			in := memory.Input{Text: fmt.Sprintf("fact %d", i)}
			if i%2 == 1 {
				in.Thread, in.Kind = "project:odd", "decision"
			}
			ev, err := memory.Remember(tx, in)
			if err != nil {
				return err
			}
			ids = append(ids, ev.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f := serve(t, v, false)
	var seen []string
	path := "/timeline"
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatal("the timeline does not end")
		}
		body := f.page(path, "timeline")
		got := rowsOf(body)
		if next := nextPage(body); next != "" && len(got) != 100 {
			t.Errorf("%s: %d rows on a page that is not the last", path, len(got))
		}
		seen = append(seen, got...)
		path = nextPage(body)
	}
	if len(seen) != 250 {
		t.Fatalf("the pages hold %d events, want 250", len(seen))
	}
	for i, id := range seen {
		if id != ids[len(ids)-1-i] {
			t.Fatalf("event %d of the walk is %s, want %s (newest first)", i, id, ids[len(ids)-1-i])
		}
	}
	// Filters: a thread and a kind; the next page keeps them.
	body := f.page("/timeline?thread=project:odd&kind=decision", "timeline")
	got := rowsOf(body)
	next := nextPage(body)
	if len(got) != 100 || got[0] != ids[249] || !strings.Contains(next, "thread=project%3Aodd") || !strings.Contains(next, "kind=decision") {
		t.Fatalf("filtered page: %d rows, first %s, next %q", len(got), got[0], next)
	}
	body = f.page(next, "timeline")
	if rest := rowsOf(body); len(rest) != 25 || nextPage(body) != "" || rest[24] != ids[1] {
		t.Errorf("the filtered second page: %d rows, next %q", len(rest), nextPage(body))
	}
	if got := rowsOf(f.page("/timeline?agent=nobody", "timeline")); len(got) != 0 {
		t.Errorf("agent nobody: %d rows", len(got))
	}
	if got := rowsOf(f.page("/timeline?until=2000-01-01", "timeline")); len(got) != 0 {
		t.Errorf("until 2000: %d rows", len(got))
	}
	if got := rowsOf(f.page("/timeline?since=2000-01-01&kind=fact", "timeline")); len(got) != 100 || got[0] != ids[248] {
		t.Errorf("since 2000, facts: %d rows", len(got))
	}
	// at= opens on one event (what a head's line links to), by prefix too.
	if got := rowsOf(f.page("/timeline?at="+ids[10][:20], "timeline")); len(got) != 11 || got[0] != ids[10] {
		t.Errorf("at %s: %v", ids[10], got)
	}
}

// TestSessionAndLineage: a session shows its messages, its events and its
// node; a node shows its text and its lineage as an SVG whose every box
// links to a node page.
func TestSessionAndLineage(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	agent := v.Config.Agent
	var nodes []*node.Node
	for _, s := range []string{"s1", "s2"} {
		testvault.AppendMessage(t, v, s, "please remember the <b>"+s+"</b> plan")
		_, err := v.Update(vault.TxOptions{Session: s}, func(tx *vault.Tx) error {
			n, _, err := lineage.Summarize(tx, transcript.Ref{Agent: agent, Session: s}, lineage.SummaryOptions{Thread: "project:shop"})
			nodes = append(nodes, n)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var condensed []*node.Node
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		var err error
		condensed, err = lineage.Condense(tx, lineage.CondenseOptions{Current: true})
		return err
	})
	if err != nil || len(condensed) != 1 {
		t.Fatalf("condense: %v %v", condensed, err)
	}
	f := serve(t, v, false)
	body := f.page("/sessions/"+agent+"/s1", "session")
	if !strings.Contains(body, "please remember the &lt;b&gt;s1&lt;/b&gt; plan") || !strings.Contains(body, `href="/nodes/`+nodes[0].ID+`"`) {
		t.Errorf("the session page:\n%s", body)
	}
	body = f.page("/nodes/"+nodes[0].ID, "node")
	svg := body[strings.Index(body, "<svg"):strings.Index(body, "</svg>")]
	for _, want := range []string{condensed[0].ID, nodes[0].ID, nodes[1].ID} {
		if !strings.Contains(svg, `href="/nodes/`+want+`"`) {
			t.Errorf("the lineage of %s has no box for %s:\n%s", nodes[0].ID, want, svg)
		}
	}
	if strings.Count(svg, "<line ") != 1 {
		t.Errorf("one parent, no child: want one line:\n%s", svg)
	}
	body = f.page("/nodes/"+condensed[0].ID[:24], "node")
	svg = body[strings.Index(body, "<svg"):strings.Index(body, "</svg>")]
	if strings.Count(svg, "<line ") != 2 || strings.Count(svg, "<a ") != 3 {
		t.Errorf("a condensed node of two children:\n%s", svg)
	}
}

// TestHeadHistoryAndDiff: a head lists the commits that changed it; the
// diff of two of them shows the line that came, linked to the event it
// names or to the commit.
func TestHeadHistoryAndDiff(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	var commits []string
	for _, text := range []string{"first <fact>", "second fact", "third fact"} {
		testvault.Remember(t, v, text)
		if _, err := heads.Refresh(v, heads.RefreshOptions{Trigger: "render", Memory: true}); err != nil {
			t.Fatal(err)
		}
		_ = v.Log(func(ci gitrepo.CommitInfo) bool { commits = append(commits, ci.Hash); return false })
	}
	f := serve(t, v, false)
	body := f.page("/heads/MEMORY.md", "head")
	if !strings.Contains(body, `id="history"`) {
		t.Fatalf("no history:\n%s", body)
	}
	hist := regexp.MustCompile(`href="\?rev=([0-9a-f]{40})"`).FindAllStringSubmatch(body, -1)
	if len(hist) < 2 {
		t.Skipf("MEMORY.md changed %d times in this vault's commits", len(hist))
	}
	newest, older := hist[0][1], hist[len(hist)-1][1]
	body = f.page("/heads/MEMORY.md?from="+older+"&to="+newest, "head")
	if !strings.Contains(body, `id="diff"`) || !strings.Contains(body, `class="add"`) {
		t.Errorf("the diff:\n%s", body)
	}
	if !regexp.MustCompile(`<div class="add"><a href="(/timeline\?at=e_[0-9a-z]{26}|/nodes/n_[0-9a-z]{26}|\?rev=` + newest + `)">`).MatchString(body) {
		t.Errorf("no added line links to its event or its commit:\n%s", body)
	}
	if strings.Contains(body, "<fact>") {
		t.Errorf("the diff holds markup raw")
	}
	same := f.page("/heads/MEMORY.md?from="+newest+"&to="+newest, "head")
	if !strings.Contains(same, "The two versions are the same.") {
		t.Errorf("a diff of one version with itself:\n%s", same)
	}
	f.page("/heads/MEMORY.md?rev="+older[:10], "head")
}

// TestWrites: without --write the routes are 404 and no form is shown;
// with it, a write needs the server's Origin and the form's CSRF token,
// and a good one closes the commitment through one transaction.
func TestWrites(t *testing.T) {
	t.Parallel()
	v, c := hostile(t)
	ro := serve(t, v, false)
	if body := ro.page("/", "overview"); strings.Contains(body, "<form class=\"inline\" method=\"post\"") || strings.Contains(body, "csrf") {
		t.Errorf("a read-only overview shows a write form")
	}
	post := func(f *fixture, path, origin string, form url.Values) (*http.Response, string) {
		req, _ := http.NewRequest("POST", f.srv.URL+path+"?token="+f.token, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		return f.do(req)
	}
	origin := "http://127.0.0.1:" + ro.port
	good := url.Values{"csrf": {csrfToken(ro.token)}, "note": {"done"}}
	if resp, _ := post(ro, "/commitments/"+c.ID+"/close", origin, good); resp.StatusCode != 404 {
		t.Errorf("close without --write: %d", resp.StatusCode)
	}
	events := len(testvaultRows(t, v))

	f := serve(t, v, true)
	origin = "http://127.0.0.1:" + f.port
	good = url.Values{"csrf": {csrfToken(f.token)}, "note": {"done"}}
	if body := f.page("/", "overview"); !strings.Contains(body, `action="/commitments/`+c.ID+`/close"`) {
		t.Errorf("the overview with --write has no close form:\n%s", body)
	}
	for name, try := range map[string]struct {
		origin string
		form   url.Values
	}{
		"no origin":     {"", good},
		"other origin":  {"http://evil.example", good},
		"other port":    {"http://127.0.0.1:1", good},
		"null origin":   {"null", good},
		"no csrf":       {origin, url.Values{"note": {"x"}}},
		"bad csrf":      {origin, url.Values{"csrf": {csrfToken("x" + f.token[1:])}}},
		"token as csrf": {origin, url.Values{"csrf": {f.token}}},
	} {
		if resp, body := post(f, "/commitments/"+c.ID+"/close", try.origin, try.form); resp.StatusCode != 403 {
			t.Errorf("%s: %d\n%s", name, resp.StatusCode, body)
		}
	}
	if n := len(testvaultRows(t, v)); n != events {
		t.Fatalf("a refused write changed the ledger: %d events, was %d", n, events)
	}
	if resp, body := post(f, "/commitments/e_01zzzzzzzzzzzzzzzzzzzzzzzz/close", origin, good); resp.StatusCode != 404 {
		t.Errorf("close of an unknown commitment: %d\n%s", resp.StatusCode, body)
	}
	if resp, body := post(f, "/heads/resolve", origin, url.Values{"csrf": {csrfToken(f.token)}, "head": {"../memvault.toml"}, "take": {"ours"}}); resp.StatusCode != 400 {
		t.Errorf("resolve of a non-head: %d\n%s", resp.StatusCode, body)
	}
	resp, body := post(f, "/commitments/"+c.ID+"/close", origin, good)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("close: %d %q\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	if r := st.Get(c.ID); r == nil || st.Status(r) != vault.StatusClosed {
		t.Errorf("the commitment is not closed: %+v", r)
	}
	testvault.MustVerify(t, v)
	if resp, _ := post(f, "/commitments/"+c.ID+"/close", origin, good); resp.StatusCode < 400 {
		t.Errorf("closing a closed commitment again: %d", resp.StatusCode)
	}
}

func testvaultRows(t *testing.T, v *vault.Vault) []*vault.Row {
	t.Helper()
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	return st.Rows
}

// TestOverviewCapsLists: a vault with more open commitments than the
// overview lists shows the first of them and links to the rest.
func TestOverviewCapsLists(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		for i := range overviewList + 7 {
			if _, err := memory.OpenCommitment(tx, memory.Input{Text: fmt.Sprintf("promise %d", i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	body := serve(t, v, false).page("/", "overview")
	list := body[strings.Index(body, `<ul id="commitments">`):]
	list = list[:strings.Index(list, "</ul>")]
	if n := strings.Count(list, "<li>"); n != overviewList || !strings.Contains(body, `<a href="/timeline?kind=commitment.open">7 more</a>`) {
		t.Errorf("%d commitments listed, and the rest:\n%s", n, body)
	}
}

// TestContinuityPage lists decisions newest first, with their status and
// escaped, the superseded one marked.
func TestContinuityPage(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	_, err := continuity.UpdateContinuity(v, continuity.ContinuityOptions{Trigger: "test"}, func(ct *continuity.ContinuityTx) error {
		if _, err := ct.Decide(continuity.DecideInput{Decision: "use <b>WAL</b>", Rationale: "fast"}); err != nil {
			return err
		}
		if _, err := ct.Decide(continuity.DecideInput{Decision: "use a journal", Rationale: "simpler", Supersedes: "D1"}); err != nil {
			return err
		}
		_, err := ct.Learn(continuity.LearnInput{Error: `quotes " broke it`, Prevention: "escape"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	body := serve(t, v, false).page("/continuity", "continuity")
	j, w := strings.Index(body, "use a journal"), strings.Index(body, "use &lt;b&gt;WAL&lt;/b&gt;")
	if j < 0 || w < 0 || j > w || !strings.Contains(body, `<tr class="status-superseded">`) || !strings.Contains(body, "quotes &#34; broke it") {
		t.Errorf("the continuity page:\n%s", body)
	}
}

// TestResolveHeadConflict makes a conflict as heads_merge.txtar does (the
// person and the render both change the line of MEMORY.md's next action):
// the head page with --write offers to resolve it, a POST taking the
// render's text resolves it through memvault resolve's call, and the page
// then offers nothing.
func TestResolveHeadConflict(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	refresh := func() {
		if _, err := heads.Refresh(v, heads.RefreshOptions{Trigger: "session-end", Memory: true}); err != nil {
			t.Fatal(err)
		}
	}
	var first *vault.Event
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) (err error) {
		first, err = memory.Remember(tx, memory.Input{Kind: "next", Text: "the first next"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	refresh()
	path := filepath.Join(v.Root, vault.MemoryHead)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The person and the render both change the line of the first next
	// action: the person rewrites it, a supersede replaces its row.
	line := "- the first next (`" + first.ID + "`)\n"
	edited := strings.Replace(string(data), line, "- person: first the <demo>\n", 1)
	if edited == string(data) {
		t.Fatalf("no line of the first next action:\n%s", data)
	}
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := memory.Supersede(tx, first.ID, "the second next")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	refresh()
	conflicts := func() int {
		st, _, err := heads.FoldedState(v)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, h := range heads.HeadStates(st) {
			n += len(h.Conflicts)
		}
		return n
	}
	if conflicts() != 1 {
		t.Fatalf("%d conflicts, want the one the test makes", conflicts())
	}
	f := serve(t, v, true)
	body := f.page("/heads/MEMORY.md", "head")
	if !strings.Contains(body, `action="/heads/resolve"`) || strings.Contains(body, "<demo>") {
		t.Fatalf("the head page offers no resolve, or shows markup raw:\n%s", body)
	}
	form := url.Values{"csrf": {csrfToken(f.token)}, "head": {vault.MemoryHead}, "take": {"theirs"}}
	req, _ := http.NewRequest("POST", f.srv.URL+"/heads/resolve?token="+f.token, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://127.0.0.1:"+f.port)
	resp, body := f.do(req)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/heads/MEMORY.md" {
		t.Fatalf("resolve: %d %q\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if n := conflicts(); n != 0 {
		t.Errorf("%d conflicts after the resolve", n)
	}
	if body := f.page("/heads/MEMORY.md", "head"); strings.Contains(body, `action="/heads/resolve"`) {
		t.Errorf("the page still offers a resolve")
	}
	testvault.MustVerify(t, v)
}
