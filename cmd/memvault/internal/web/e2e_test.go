// The web view (`memvault serve`, docs/WEB.md) in a real browser: headless
// Chromium (Debian's package) driven by playwright-core through
// testdata/browse.mjs, against the real binary serving a fixture vault, in
// the world of vault/vaulttest/e2etest.
//
//	MEMVAULT_E2E_CHROMIUM    the chromium binary (.ci/e2e-browser.sh installs Debian's)
//	MEMVAULT_E2E_PLAYWRIGHT  the playwright-core package folder (pinned in .ci/e2e-browser.sh)
//	MEMVAULT_ARTIFACTS       optional: where the screenshots go (default <repo>/.artifacts/web/)
//
// The test skips, saying why, when either is missing, when node is not on
// PATH, when the memvault under test has no serve command, or when it
// serves some of the pages not yet (404): then it still checks the pages
// that are there and names the missing ones.
package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/vaulttest/e2etest"
)

// TestMain removes the memvault binary the end-to-end tests built.
func TestMain(m *testing.M) { e2etest.Main(m) }

// e2e is the test's world (e2etest.World), with the web view's checks.
type e2e struct{ *e2etest.World }

// repoRoot is the module's root, from this package's folder.
const repoRoot = "../../../.."

// webPage is what browse.mjs reports of one loaded page.
type webPage struct {
	Name        string   `json:"name"`
	URL         string   `json:"url"`
	Path        string   `json:"path"`
	Status      int      `json:"status"`
	GotoError   string   `json:"gotoError"`
	CSP         string   `json:"csp"`
	MainID      string   `json:"mainId"`
	H1          string   `json:"h1"`
	Text        string   `json:"text"`
	LiveHostile int      `json:"liveHostile"`
	Pwned       bool     `json:"pwned"`
	Screenshot  string   `json:"screenshot"`
	Requests    []string `json:"requests"`
	Dialogs     []string `json:"dialogs"`
	Errors      []string `json:"errors"`
	Console     []string `json:"console"`
	LinkStatus  map[string]any
	Links       []string `json:"links"`
	SVGs        []struct {
		HTML     string   `json:"html"`
		Text     string   `json:"text"`
		Shapes   int      `json:"shapes"`
		Width    float64  `json:"width"`
		Height   float64  `json:"height"`
		Overflow []string `json:"overflow"`
	} `json:"svgs"`
	Wide            bool     `json:"wide"`
	Wrapped         []string `json:"wrapped"`
	PhoneWide       bool     `json:"phoneWide"`
	PhoneWrapped    []string `json:"phoneWrapped"`
	PhoneScreenshot string   `json:"phoneScreenshot"`
	DocWidth        float64  `json:"docWidth"`
	Sticking        []string `json:"sticking"`
	PhoneDocWidth   float64  `json:"phoneDocWidth"`
	PhoneSticking   []string `json:"phoneSticking"`
	Scripts         []string `json:"scripts"`
}

// webLive is what browse.mjs reports of the live flow: a page left open
// while the command line writes a row.
type webLive struct {
	webPage
	Before       string `json:"before"`
	Wrote        string `json:"wrote"`
	Appeared     bool   `json:"appeared"`
	MS           int    `json:"ms"`
	Mark         string `json:"mark"`
	Badge        string `json:"badge"`
	Navigations  int    `json:"navigations"`
	LiveStatuses []int  `json:"liveStatuses"`
}

type webRun struct {
	Browser   string    `json:"browser"`
	Forbidden []webPage `json:"forbidden"`
	Entry     webPage   `json:"entry"`
	Cookies   []struct {
		Name     string `json:"name"`
		Value    string `json:"value"`
		Domain   string `json:"domain"`
		HTTPOnly bool   `json:"httpOnly"`
		SameSite string `json:"sameSite"`
	} `json:"cookies"`
	Pages      []webPage `json:"pages"`
	ErrorPages []webPage `json:"errorPages"`
	RecallForm *webPage  `json:"recallForm"`
	Write      *webWrite `json:"write"`
	Live       *webLive  `json:"live"`
}

// webWrite is what browse.mjs reports of the --write flow.
type webWrite struct {
	Entry  webPage `json:"entry"`
	NoForm bool    `json:"noForm"`
	Action string  `json:"action"`
	Forged []struct {
		WithCSRF bool   `json:"withCSRF"`
		Origin   string `json:"origin"`
		Status   int    `json:"status"`
		Error    string `json:"error"`
	} `json:"forged"`
	Click *struct {
		webPage
		PostStatus int    `json:"postStatus"`
		Origin     string `json:"origin"`
		Error      string `json:"error"`
	} `json:"click"`
	Dialogs []string `json:"dialogs"`
	Errors  []string `json:"errors"`
}

// webCheck is one page the test loads and what it must show.
type webCheck struct {
	name    string   // screenshot name; also the page's key in the report
	main    string   // want <main id="page-MAIN">
	path    string   // path and query, without the token (the cookie carries it)
	want    []string // visible text the page must show
	notWant []string // text it must not show
	svgIDs  []string // an <svg> must hold each of these ids (the node's box, its parent's)
	linkTo  []string // some link on the page must lead to each of these ids
}

// requireServeCommand skips a test when the memvault binary has no serve
// command.
func requireServeCommand(t *testing.T, bin string) {
	t.Helper()
	if out, err := exec.Command(bin, "serve", "--help").CombinedOutput(); err != nil {
		t.Skipf("e2e web browser: this memvault has no serve command yet (memvault serve --help: %v): %s", err, e2etest.ClipHead(string(out)))
	}
}

// artifactsDir is where the screenshots go.
func artifactsDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("MEMVAULT_ARTIFACTS"); d != "" {
		return d
	}
	d, err := filepath.Abs(filepath.Join(repoRoot, ".artifacts", "web"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var serveLine = regexp.MustCompile(`^memvault: serving (.+) at (http://127\.0\.0\.1:([0-9]+)/\?token=([^&\s]+))$`)

// serve starts `memvault serve` in the project, reads its first line and
// returns the URL it printed; the server is stopped with SIGINT at cleanup
// and must exit.
func (e *e2e) serve(args ...string) (origin, entry, token string) {
	e.T.Helper()
	cmd := exec.Command(e.Bin, append([]string{"serve"}, args...)...)
	cmd.Dir, cmd.Env = e.Proj, e.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.T.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		e.T.Fatal(err)
	}
	done := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() { // drain
		}
		done <- cmd.Wait()
	}()
	e.T.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-done:
			e.T.Logf("memvault serve stopped on SIGINT: %v; stderr: %s", err, e2etest.ClipHead(stderr.String()))
		case <-time.After(15 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			e.T.Errorf("memvault serve did not exit within 15s of SIGINT")
		}
	})
	var first string
	select {
	case l, ok := <-lines:
		if !ok {
			e.T.Fatalf("memvault serve printed no line and closed stdout; stderr: %s", e2etest.ClipHead(stderr.String()))
		}
		first = l
	case <-time.After(30 * time.Second):
		e.T.Fatalf("memvault serve printed no line in 30s; stderr: %s", e2etest.ClipHead(stderr.String()))
	}
	m := serveLine.FindStringSubmatch(first)
	if m == nil {
		e.T.Fatalf("memvault serve's first line is not `memvault: serving <root> at http://127.0.0.1:<port>/?token=<token>`: %q", first)
	}
	e.T.Logf("memvault serve: %s", first)
	if root, _ := filepath.EvalSymlinks(e.Proj); !strings.Contains(m[1], e.Proj) && !strings.Contains(m[1], root) {
		e.T.Errorf("memvault serve names the vault root %q, want the project's (%s)", m[1], e.Proj)
	}
	u, err := url.Parse(m[2])
	if err != nil {
		e.T.Fatalf("the printed URL %q: %v", m[2], err)
	}
	return "http://" + u.Host, u.RequestURI(), m[4]
}

// vaultCommits lists the vault's commits that changed path, newest first.
func (e *e2e) vaultCommits(path string) []string {
	e.T.Helper()
	cmd := exec.Command("git", "-C", filepath.Join(e.Proj, ".memory"), "log", "--format=%H", "--", path)
	cmd.Env = e.Env
	out, err := cmd.Output()
	if err != nil {
		e.T.Fatalf("git log %s: %v", path, err)
	}
	return strings.Fields(string(out))
}

// requireLoopbackOnly fails the test when the server at origin also
// answers on another address than 127.0.0.1: on 127.0.0.2 (it listens on
// every address of the machine) or on [::1] (on every IPv6 one).
func (e *e2e) requireLoopbackOnly(origin string) {
	e.T.Helper()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(origin, "http://"))
	for _, host := range []string{"127.0.0.2", "::1"} {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 2*time.Second); err == nil {
			c.Close()
			e.T.Errorf("memvault serve answers on %s port %s too: it must listen on 127.0.0.1 only", host, port)
		}
	}
}

// vaultState is the vault's HEAD and its git status, to tell that nothing
// was written.
func (e *e2e) vaultState() string {
	e.T.Helper()
	var b strings.Builder
	for _, args := range [][]string{{"rev-parse", "HEAD"}, {"status", "--porcelain"}} {
		cmd := exec.Command("git", append([]string{"-C", filepath.Join(e.Proj, ".memory")}, args...)...)
		cmd.Env = e.Env
		out, err := cmd.Output()
		if err != nil {
			e.T.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		b.Write(bytes.TrimSpace(out))
		b.WriteString(" ")
	}
	return b.String()
}

// TestE2EWebBrowser: `memvault serve` on a fixture vault, loaded in
// headless Chromium: the overview, the timeline, two sessions, a node's
// lineage DAG, a head diff, CONTINUITY.md and a recall. Each page must show
// its content, render the hostile memory text as text (no dialog, no
// script run, no script element or handler carrying it), request nothing
// but the server on 127.0.0.1, raise no script error or CSP violation,
// and link only to pages that answer; without the token every page is 403
// and leaks nothing. A full-page screenshot of each goes to the artifacts
// folder.
func TestE2EWebBrowser(t *testing.T) {
	chromium, pw := os.Getenv("MEMVAULT_E2E_CHROMIUM"), os.Getenv("MEMVAULT_E2E_PLAYWRIGHT")
	if chromium == "" || pw == "" {
		t.Skip("e2e web browser: MEMVAULT_E2E_CHROMIUM or MEMVAULT_E2E_PLAYWRIGHT is not set (run .ci/e2e-browser.sh to install Debian's chromium and playwright-core)")
	}
	for _, p := range []string{chromium, filepath.Join(pw, "package.json")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("e2e web browser: %v", err)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("e2e web browser: node is not on PATH (playwright-core runs on it)")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "browse.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if e2etest.InNetns(t) { // only loopback: the browser provably reaches nothing else
		return
	}
	e := &e2e{e2etest.New(t)}
	// The fixture's writes refresh the heads in process: a detached
	// worker's refresh committing while the pages are browsed would move
	// HEAD under the check that browsing changes nothing.
	e.Setenv("MEMVAULT_REFRESH=inline")

	// The fixture vault. Each kind of content carries a word only it holds.
	hostileWord := e2etest.RandWord("zqhostile")
	hostile := `<script>window.__memvaultPwned=1;alert("` + hostileWord + `")</script><img src=x onerror="window.__memvaultPwned=1;alert('` + hostileWord + `')">`
	decideWord := e2etest.RandWord("zqdecide")
	commitWord := e2etest.RandWord("zqcommit")
	diffWord := e2etest.RandWord("zqdiff")
	promptWord := e2etest.RandWord("zqprompt")
	e.Memvault("decide", "--global", "-d", "serve the web view on loopback only "+decideWord, "-r", "a page off 127.0.0.1 would leak memory")
	commitID := strings.TrimSpace(e.Memvault("commitment", "open", "--global", "review the web view "+commitWord))
	e.Memvault("commitment", "open", "--global", "hostile commitment "+hostile)
	e.Memvault("remember", "--global", "hostile fact "+hostile)
	e.Memvault("render")
	diffID := strings.TrimSpace(e.Memvault("remember", "--global", "the second render adds "+diffWord))
	e.Memvault("render")
	heads := e.vaultCommits("MEMORY.md")
	if len(heads) < 2 {
		t.Fatalf("MEMORY.md has %d commits after two renders, want 2 or more", len(heads))
	}
	from, to := heads[1], heads[0]

	// A session imported from a real Claude Code transcript (its AWS key is
	// redacted at import and must not come back on the page).
	fixture, err := filepath.Abs(filepath.Join(repoRoot, "fixtures", "transcripts", "claude-code", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	e.Memvault("transcript", "import", "--format", "claude-code", "--session", "webcc", fixture)
	e.Memvault("summarize", "--session", "webcc")
	// Two sessions of today through the hook, one with the hostile text in
	// its prompt, summarised and condensed: the first one's node then has a
	// parent (the condensed node) and a sibling.
	for _, s := range []string{"web-a", "web-b"} {
		prompt := "the " + s + " session asks about " + promptWord
		if s == "web-a" {
			prompt += " and pastes " + hostile
		}
		e.Hook("claude-code", "prompt-submit", map[string]any{"session_id": s, "cwd": e.Proj,
			"hook_event_name": "UserPromptSubmit", "prompt": prompt})
	}
	var nodeA, nodeB string
	for _, s := range []string{"web-a", "web-b"} {
		var nodes []struct {
			ID string `json:"id"`
		}
		out := e.Memvault("summarize", "--session", s, "--json")
		if err := json.Unmarshal([]byte(out), &nodes); err != nil || len(nodes) == 0 {
			t.Fatalf("summarize --session %s --json: %v\n%s", s, err, out)
		}
		if s == "web-a" {
			nodeA = nodes[0].ID
		} else {
			nodeB = nodes[0].ID
		}
	}
	e.Memvault("condense", "--period", "day", "--current")
	var parent string
	for _, n := range e.Nodes("condensed", "") {
		kids, _ := json.Marshal(n["children"])
		if strings.Contains(string(kids), nodeA) {
			parent, _ = n["id"].(string)
		}
	}
	if parent == "" {
		t.Fatalf("condense made no node over %s: %v", nodeA, e.Nodes("", ""))
	}
	agentOf := func(session string) string {
		for _, s := range e.Sessions() {
			if s["session"] == session {
				a, _ := s["agent"].(string)
				return a
			}
		}
		t.Fatalf("memvault sessions lists no %s: %v", session, e.Sessions())
		return ""
	}

	// A thread of the fixture, for its page.
	threadWord := e2etest.RandWord("zqthread")
	e.Memvault("remember", "--thread", "project:webview", "the thread's own row "+threadWord)
	if out := e.Memvault("threads", "--json"); !strings.Contains(out, `"key": "project:webview"`) {
		t.Fatalf("memvault threads --json does not list project:webview:\n%s", out)
	}
	threadKey := "project:webview"
	threadPath := "/threads/" + strings.Replace(threadKey, ":", "/", 1)

	checks := []webCheck{
		{name: "overview", main: "overview", path: "/", want: []string{commitWord, hostileWord}},
		{name: "timeline", main: "timeline", path: "/timeline", want: []string{decideWord, commitWord, hostileWord}},
		{name: "timeline-decisions", main: "timeline", path: "/timeline?kind=decision", want: []string{decideWord}, notWant: []string{commitWord, diffWord}},
		{name: "session", main: "session", path: "/sessions/" + agentOf("webcc") + "/webcc",
			want: []string{"please use a tool to echo something", "memvault-tool-ok"}, notWant: []string{"AKIAIOSFODNN7EXAMPLE"}},
		{name: "session-hostile", main: "session", path: "/sessions/" + agentOf("web-a") + "/web-a", want: []string{promptWord, hostileWord}},
		{name: "node", main: "node", path: "/nodes/" + nodeA, want: []string{nodeA}, svgIDs: []string{nodeA, parent, nodeB}},
		// Heads are rendered Markdown: no raw heading, each row's id a link.
		{name: "head", main: "head", path: "/heads/MEMORY.md", want: []string{diffWord, hostileWord, "Decisions"},
			notWant: []string{"## ", "(`e_"}, linkTo: []string{diffID, commitID}},
		{name: "head-continuity", main: "head", path: "/heads/CONTINUITY.md", want: []string{decideWord, "Key Decisions"}, notWant: []string{"## "}},
		{name: "head-raw", main: "head", path: "/heads/MEMORY.md?raw=1", want: []string{"## Decisions", diffWord}},
		{name: "head-diff", main: "head", path: "/heads/MEMORY.md?from=" + from + "&to=" + to, want: []string{diffWord},
			linkTo: []string{diffID}}, // a line of the diff links to the event it came from
		{name: "continuity", main: "continuity", path: "/continuity", want: []string{decideWord}},
		// Browsing: every session, and a thread's own page.
		{name: "sessions", main: "sessions", path: "/sessions", want: []string{"webcc", "web-a", "web-b"}},
		{name: "thread", main: "thread", path: threadPath, want: []string{threadKey, threadWord}, notWant: []string{decideWord}},
		{name: "timeline-before", main: "timeline", path: "/timeline?before=" + diffID, want: []string{decideWord}, notWant: []string{diffWord}},
		{name: "recall", main: "recall", path: "/recall?q=" + decideWord, want: []string{decideWord}},
		// The query is echoed on the page: a reflected hostile text.
		{name: "recall-hostile", main: "recall", path: "/recall?q=" + url.QueryEscape(hostile), want: []string{hostileWord}},
	}

	// The fixture is made first, so that it is checked even while the
	// command is missing.
	requireServeCommand(t, e.Bin)
	headBefore := e.vaultState()
	origin, entry, token := e.serve()
	e.requireLoopbackOnly(origin)
	// --port: a second server beside the first, on the port asked for,
	// with a token of its own.
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		origin2, _, token2 := e.serve("--port", strconv.Itoa(port))
		if want := "http://127.0.0.1:" + strconv.Itoa(port); origin2 != want {
			t.Errorf("memvault serve --port %d serves at %s, want %s", port, origin2, want)
		}
		if token2 == token || len(token) < 16 {
			t.Errorf("two servers' tokens: %q and %q, want different random tokens of 16 characters or more", token, token2)
		}
	}
	arts := artifactsDir(t)
	if err := os.MkdirAll(arts, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := map[string]any{
		"playwright": pw, "chromium": chromium, "origin": origin, "tokenPath": entry,
		"artifacts": arts, "hostile": hostileWord,
		"noToken": []string{"/", "/timeline", "/nodes/" + nodeA, "/heads/MEMORY.md", "/?token=" + token + "x", "/?token="},
	}
	// No screenshot of an earlier run passes for this run's: the names this
	// test writes go first (the folder may hold other files).
	old := []string{"entry.png", "recall-form.png", "forbidden*.png", "error-*.png", "write-*.png"}
	var pages []map[string]string
	for _, c := range checks {
		old = append(old, c.name+".png", c.name+"-phone.png")
		pages = append(pages, map[string]string{"name": c.name, "path": c.path})
	}
	for _, pat := range old {
		names, _ := filepath.Glob(filepath.Join(arts, pat))
		for _, n := range names {
			os.Remove(n)
		}
	}
	spec["pages"] = pages
	spec["recallForm"] = map[string]string{"from": "/", "query": decideWord}
	// Pages that do not exist, named by hostile text: an error, never a
	// 200 or a 500, and the text in the message stays text.
	spec["errorPages"] = []map[string]string{
		{"name": "error-node", "path": "/nodes/" + url.PathEscape(hostile)},
		{"name": "error-session", "path": "/sessions/default/" + url.PathEscape(hostile)},
		{"name": "error-head", "path": "/heads/MEMORY.md?from=" + url.QueryEscape(hostile) + "&to=HEAD"},
		{"name": "error-route", "path": "/" + url.PathEscape(hostile)},
	}
	start := time.Now()
	run := e.browse(node, script, spec)
	t.Logf("chromium %s loaded %d pages in %.1fs; screenshots in %s", run.Browser, len(run.Forbidden)+1+len(run.Pages), time.Since(start).Seconds(), arts)

	secrets := []string{decideWord, commitWord, diffWord, promptWord, hostileWord}
	for _, p := range run.Forbidden {
		e.requireOnlyLoopback(origin, p)
		if p.GotoError != "" || p.Status != 403 {
			t.Errorf("without a valid token, %s answered %d (%s), want 403", p.Path, p.Status, p.GotoError)
		}
		for _, w := range secrets {
			if strings.Contains(p.Text, w) {
				t.Errorf("the 403 page of %s shows the vault's content (%s)", p.Path, w)
			}
		}
	}
	if run.Entry.Status != 200 {
		t.Fatalf("the printed URL %s answered %d (%s), want 200", entry, run.Entry.Status, run.Entry.GotoError)
	}
	// The token's cookie: set by the printed URL, out of reach of scripts
	// and not sent along by other sites' requests.
	cookie := false
	for _, c := range run.Cookies {
		if c.Name != "memvault_token" {
			continue
		}
		cookie = true
		if !c.HTTPOnly || c.SameSite == "None" || c.Domain != "127.0.0.1" {
			t.Errorf("the memvault_token cookie is HttpOnly=%v SameSite=%s Domain=%s, want HttpOnly, SameSite Strict or Lax, on 127.0.0.1", c.HTTPOnly, c.SameSite, c.Domain)
		}
	}
	if !cookie {
		t.Errorf("the printed URL set no memvault_token cookie (cookies: %+v)", run.Cookies)
	}
	// Read-only by default: browsing wrote nothing.
	if after := e.vaultState(); after != headBefore {
		t.Errorf("browsing changed the vault (read-only without --write):\nbefore: %s\nafter:  %s", headBefore, after)
	}

	e.liveUpdate(node, script, pw, chromium, origin, entry, arts, hostileWord)

	// The recall box of the overview, typed into and submitted: the form
	// works under the CSP and leads to the recall page with the answer.
	if f := run.RecallForm; f == nil {
		t.Errorf("browse.mjs reported no recall-form step")
	} else if f.Status != 404 || f.GotoError != "" {
		e.requireWebPage(origin, webCheck{name: "recall-form", main: "recall", path: f.URL, want: []string{decideWord}}, *f, hostileWord)
		if u, err := url.Parse(f.URL); err != nil || u.Path != "/recall" || u.Query().Get("q") != decideWord {
			t.Errorf("recall-form: the recall box led to %s, want /recall?q=%s", f.URL, decideWord)
		}
	}
	for _, p := range run.ErrorPages {
		e.requireOnlyLoopback(origin, p)
		if p.GotoError != "" || p.Status < 400 || p.Status >= 500 {
			t.Errorf("%s (a hostile name where an id goes): answered %d %s, want a 4xx error", p.Name, p.Status, p.GotoError)
		}
		if len(p.Dialogs) > 0 || p.Pwned || p.LiveHostile > 0 {
			t.Errorf("%s: the hostile text in the URL became markup: dialogs %v, script ran %v, %d script elements or handlers carry it", p.Name, p.Dialogs, p.Pwned, p.LiveHostile)
		}
	}

	// Every id a page shows, short or whole, names one event or node.
	var vaultIDs []string
	for _, r := range e.Ledger("") {
		id, _ := r["id"].(string)
		vaultIDs = append(vaultIDs, id)
	}
	for _, n := range e.Nodes("", "") {
		id, _ := n["id"].(string)
		vaultIDs = append(vaultIDs, id)
	}
	shownID := regexp.MustCompile(`\b[en]_[0-9a-z]{4,26}\b`)
	for _, p := range run.Pages {
		for _, label := range shownID.FindAllString(p.Text, -1) {
			n := 0
			for _, id := range vaultIDs {
				if strings.HasPrefix(id, label) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: the id %s shown on the page names %d of the vault's events and nodes, want 1", p.Name, label, n)
			}
		}
	}

	var missing []string
	for i, c := range checks {
		if i >= len(run.Pages) || run.Pages[i].Name != c.name {
			t.Fatalf("browse.mjs reported no page %s", c.name)
		}
		p := run.Pages[i]
		if p.Status == 404 {
			missing = append(missing, c.path)
			continue
		}
		e.requireWebPage(origin, c, p, hostileWord)
	}

	// --write: a third server that may close the commitment. A form posted
	// to it from another origin (127.0.0.1 on another port, same site for
	// the cookie) is refused, with or without the CSRF field copied; the
	// person's click on the form's button closes it.
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		other := l.Addr().(*net.TCPAddr).Port
		l.Close()
		closes := func() int {
			n := 0
			for _, r := range e.Ledger("commitment.close") {
				b, _ := json.Marshal(r)
				if strings.Contains(string(b), commitID) {
					n++
				}
			}
			return n
		}
		wOrigin, wEntry, _ := e.serve("--write")
		phase := func(name string) *webWrite {
			return e.browse(node, script, map[string]any{
				"playwright": pw, "chromium": chromium, "origin": wOrigin, "artifacts": arts, "hostile": hostileWord,
				"write": map[string]any{"tokenPath": wEntry, "id": commitID, "otherPort": other, "phase": name},
			}).Write
		}
		w := phase("forge")
		switch {
		case w == nil:
			t.Errorf("browse.mjs reported no write flow")
		case w.Entry.Status != 200:
			t.Errorf("memvault serve --write: its printed URL answered %d %s", w.Entry.Status, w.Entry.GotoError)
		case w.NoForm:
			missing = append(missing, "a form closing commitment "+commitID+" on the overview of serve --write")
		default:
			for _, f := range w.Forged {
				if f.Error != "" || f.Status < 400 || f.Status >= 500 {
					t.Errorf("a form posted to %s from another origin (Origin: %s, CSRF field copied: %v) answered %d %s, want 403", w.Action, f.Origin, f.WithCSRF, f.Status, f.Error)
				}
			}
			t.Logf("--write: the forged posts answered %+v", w.Forged)
			if n := closes(); n != 0 {
				t.Fatalf("a form posted from another origin closed the commitment (%d commitment.close); the posts: %+v", n, w.Forged)
			}
			w = phase("click")
			if w == nil || w.Click == nil {
				t.Fatalf("browse.mjs reported no click")
			}
			c := w.Click
			if c.Error != "" || c.PostStatus >= 400 {
				t.Errorf("clicking the close button: POST (Origin: %s) answered %d, %s", c.Origin, c.PostStatus, c.Error)
			} else if n := closes(); n != 1 {
				t.Errorf("clicking the close button on the overview left %d commitment.close events for %s, want 1", n, commitID)
			}
			if len(w.Dialogs) > 0 || len(w.Errors) > 0 || c.Pwned || c.LiveHostile > 0 {
				t.Errorf("the --write pages: dialogs %v, script errors %v, hostile text ran %v/%d", w.Dialogs, w.Errors, c.Pwned, c.LiveHostile)
			}
			t.Logf("--write: the click's POST (Origin: %s) answered %d, then %s", c.Origin, c.PostStatus, c.URL)
		}
	}

	if len(missing) > 0 && !t.Failed() {
		t.Skipf("e2e web browser: the pages that memvault serve serves passed; these are not served yet (404): %s", strings.Join(missing, ", "))
	}
}

// liveUpdate leaves the timeline open in Chromium while `memvault
// remember` writes a row: the row must appear on the page without a
// reload (the window's mark kept, no navigation), /live must have
// answered 304 while nothing changed, and the page must raise no script
// error or CSP violation. Run after the read-only check: it writes.
func (e *e2e) liveUpdate(node, script, pw, chromium, origin, entry, arts, hostileWord string) {
	t := e.T
	t.Helper()
	word := e2etest.RandWord("zqlive")
	env := map[string]string{}
	for _, kv := range e.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	os.Remove(filepath.Join(arts, "live.png"))
	run := e.browse(node, script, map[string]any{
		"playwright": pw, "chromium": chromium, "origin": origin, "tokenPath": entry, "artifacts": arts, "hostile": hostileWord,
		"live": map[string]any{"path": "/timeline", "bin": e.Bin, "args": []string{"remember", "--global", "a row written while the page is open " + word},
			"cwd": e.Proj, "env": env, "word": word},
	})
	l := run.Live
	switch {
	case l == nil:
		t.Errorf("browse.mjs reported no live flow")
		return
	case l.GotoError != "" || l.Status != 200:
		t.Errorf("live: the timeline answered %d %s", l.Status, l.GotoError)
		return
	case strings.Contains(l.Before, word):
		t.Fatalf("live: the word %s is on the page before it was written", word)
	}
	if !l.Appeared || l.Mark != "kept" || l.Navigations != 0 {
		t.Errorf("live: a row written while the timeline was open (%s): shown %v after %d ms, the window's mark %q (want kept), %d navigations (want 0: no reload); /live answered %v",
			l.Wrote, l.Appeared, l.MS, l.Mark, l.Navigations, l.LiveStatuses)
	}
	if !slices.Contains(l.LiveStatuses, 304) || !slices.Contains(l.LiveStatuses, 200) {
		t.Errorf("live: /live answered %v, want 304 while nothing changed and 200 once the row was written", l.LiveStatuses)
	}
	for _, x := range append(l.Errors, l.Console...) {
		t.Errorf("live: script error or console error: %s", x)
	}
	if len(l.Scripts) != 1 || l.Scripts[0] != origin+"/static/live.js" {
		t.Errorf("live: after the update the page's scripts are %q, want only the server's live.js", l.Scripts)
	}
	e.requireOnlyLoopback(origin, l.webPage)
	if fi, err := os.Stat(l.Screenshot); err != nil || fi.Size() == 0 {
		t.Errorf("live: no screenshot at %s", l.Screenshot)
	}
	if l.Appeared {
		t.Logf("live: the row appeared in %d ms without a reload; /live answered %v; badge %q", l.MS, l.LiveStatuses, l.Badge)
	}
}

// browse runs browse.mjs with spec and returns its report.
func (e *e2e) browse(node, script string, spec map[string]any) webRun {
	e.T.Helper()
	f, err := os.CreateTemp(e.Dir, "browse-spec-*.json")
	if err != nil {
		e.T.Fatal(err)
	}
	json.NewEncoder(f).Encode(spec)
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, f.Name())
	cmd.Dir, cmd.Env = filepath.Dir(script), e.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		e.T.Fatalf("browse.mjs: %v\nstderr: %s\nstdout: %s", err, e2etest.ClipHead(stderr.String()), e2etest.ClipHead(stdout.String()))
	}
	var run webRun
	if err := json.Unmarshal(stdout.Bytes(), &run); err != nil {
		e.T.Fatalf("browse.mjs printed no report: %v\n%s", err, e2etest.ClipHead(stdout.String()))
	}
	return run
}

// requireOnlyLoopback fails the test for any request of the page that went
// anywhere but the server.
func (e *e2e) requireOnlyLoopback(origin string, p webPage) {
	e.T.Helper()
	for _, r := range p.Requests {
		u, err := url.Parse(r)
		if err == nil && u.Scheme == "data" {
			continue
		}
		if err != nil || u.Scheme+"://"+u.Host != origin {
			e.T.Errorf("%s: the page requested %s, off the server %s", p.Path, r, origin)
		}
	}
}

// requireWebPage judges one page the browser loaded.
func (e *e2e) requireWebPage(origin string, c webCheck, p webPage, hostileWord string) {
	t := e.T
	t.Helper()
	if p.GotoError != "" || p.Status != 200 {
		t.Errorf("%s (%s): answered %d, %s", c.name, c.path, p.Status, p.GotoError)
		return
	}
	if p.MainID != "page-"+c.main {
		t.Errorf("%s: <main id=%q>, want page-%s", c.name, p.MainID, c.main)
	}
	if strings.TrimSpace(p.H1) == "" {
		t.Errorf("%s: no <h1> with text", c.name)
	}
	for _, w := range c.want {
		if !strings.Contains(p.Text, w) {
			t.Errorf("%s: the page does not show %q; it shows:\n%s", c.name, w, e2etest.ClipHead(p.Text))
		}
	}
	for _, w := range c.notWant {
		if strings.Contains(p.Text, w) {
			t.Errorf("%s: the page shows %q, which it must not", c.name, w)
		}
	}
	// The hostile text: shown as text where it is shown, never run.
	if len(p.Dialogs) > 0 || p.Pwned || p.LiveHostile > 0 {
		t.Errorf("%s: the hostile memory text became markup: dialogs %v, script ran %v, %d script elements or handlers carry it", c.name, p.Dialogs, p.Pwned, p.LiveHostile)
	}
	if strings.Contains(p.Text, hostileWord) && !strings.Contains(p.Text, `<script>window.__memvaultPwned=1;alert("`+hostileWord) {
		t.Errorf("%s: the hostile text is not shown as the text it is", c.name)
	}
	e.requireOnlyLoopback(origin, p)
	for _, x := range p.Errors {
		t.Errorf("%s: uncaught script error: %s", c.name, x)
	}
	for _, x := range p.Console {
		if strings.Contains(x, "Content Security Policy") {
			t.Errorf("%s: CSP violation: %s", c.name, x)
		} else {
			t.Logf("%s: console error: %s", c.name, x)
		}
	}
	e.requireStrictCSP(c.name, p.CSP)
	for link, st := range p.LinkStatus {
		if n, ok := st.(float64); !ok || n != 200 {
			t.Errorf("%s: its link %s answered %v, want 200", c.name, link, st)
		}
	}
	for _, s := range p.SVGs {
		for _, o := range s.Overflow {
			t.Errorf("%s: an SVG box's text runs past its box: %s", c.name, o)
		}
	}
	if p.Wide {
		t.Errorf("%s: the page is %.0f pixels wide in a 1280-pixel window (it scrolls sideways): %q", c.name, p.DocWidth, p.Sticking)
	}
	// One script, the server's own, by address; none inline.
	if len(p.Scripts) != 1 || p.Scripts[0] != origin+"/static/live.js" {
		t.Errorf("%s: the page's scripts are %q, want only %s/static/live.js", c.name, p.Scripts, origin)
	}
	for _, id := range c.linkTo {
		linked := false
		for _, l := range p.Links {
			linked = linked || strings.Contains(l, id)
		}
		if !linked {
			t.Errorf("%s: no link on the page leads to %s", c.name, id)
		}
	}
	if len(c.svgIDs) > 0 {
		found := false
		for _, s := range p.SVGs {
			all := true
			for _, id := range c.svgIDs {
				all = all && strings.Contains(s.HTML, id)
			}
			if all && s.Shapes > 0 && s.Width > 0 && s.Height > 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no visible <svg> with shapes holds the boxes of %v (%d svg elements)", c.name, c.svgIDs, len(p.SVGs))
		}
	}
	t.Logf("%s: %d, %d requests, %d links followed, %d svg", c.name, p.Status, len(p.Requests), len(p.LinkStatus), len(p.SVGs))
	shots := []string{p.Screenshot, p.PhoneScreenshot}
	if c.name == "recall-form" { // a form submitted, at the laptop's width only
		shots = shots[:1]
	}
	for _, shot := range shots {
		if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
			t.Errorf("%s: no screenshot at %s: %v", c.name, shot, err)
		}
	}
	// Times on one line, at a laptop's width and a phone's.
	if len(p.Wrapped) > 0 || len(p.PhoneWrapped) > 0 {
		t.Errorf("%s: times wrap over lines: %q at 1280 px, %q at 390 px", c.name, p.Wrapped, p.PhoneWrapped)
	}
	if p.PhoneWide {
		t.Errorf("%s: the page is %.0f pixels wide on a 390-pixel phone (it scrolls sideways): %q", c.name, p.PhoneDocWidth, p.PhoneSticking)
	}
}

// requireStrictCSP fails unless the page came with a Content-Security-Policy
// that lets no inline or evaluated script and no other host run.
func (e *e2e) requireStrictCSP(name, csp string) {
	e.T.Helper()
	if csp == "" {
		e.T.Errorf("%s: no Content-Security-Policy header", name)
		return
	}
	dirs := map[string]string{}
	for _, d := range strings.Split(csp, ";") {
		f := strings.Fields(d)
		if len(f) > 0 {
			dirs[strings.ToLower(f[0])] = strings.Join(f[1:], " ")
		}
	}
	scripts, ok := dirs["script-src"]
	if !ok {
		scripts, ok = dirs["default-src"]
	}
	if !ok {
		e.T.Errorf("%s: the CSP %q sets neither script-src nor default-src", name, csp)
		return
	}
	for _, bad := range []string{"'unsafe-inline'", "'unsafe-eval'", "*", "http:", "https:", "data:"} {
		for _, v := range strings.Fields(scripts) {
			if v == bad {
				e.T.Errorf("%s: the CSP lets scripts from %s: %q", name, bad, csp)
			}
		}
	}
}
