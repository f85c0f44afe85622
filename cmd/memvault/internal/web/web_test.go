package web

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

// fixture is a vault served by a test server.
type fixture struct {
	t     *testing.T
	v     *vault.Vault
	srv   *httptest.Server
	token string
	port  string
}

// serve serves v on a test server of 127.0.0.1, as memvault serve does.
func serve(t *testing.T, v *vault.Vault, write bool) *fixture {
	t.Helper()
	token := NewToken()
	s, err := New(Options{Root: v.Root, Write: write, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	port := ts.Listener.Addr().(*net.TCPAddr).Port
	ts.Config.Handler = s.Handler(port)
	ts.Start()
	t.Cleanup(ts.Close)
	_, p, _ := net.SplitHostPort(ts.Listener.Addr().String())
	return &fixture{t: t, v: v, srv: ts, token: token, port: p}
}

// do sends req with the token in the URL (unless the URL names one) and
// returns the status and the raw body.
func (f *fixture) do(req *http.Request) (*http.Response, string) {
	f.t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// get fetches path with the token and checks the headers every response
// carries.
func (f *fixture) get(path string) (int, string) {
	f.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	req, _ := http.NewRequest("GET", f.srv.URL+path+sep+"token="+f.token, nil)
	resp, body := f.do(req)
	checkHeaders(f.t, path, resp)
	return resp.StatusCode, body
}

// page fetches a page that must answer 200 with its main and its h1.
func (f *fixture) page(path, name string) string {
	f.t.Helper()
	code, body := f.get(path)
	if code != 200 {
		f.t.Fatalf("GET %s: %d\n%s", path, code, body)
	}
	if !strings.Contains(body, `<main id="page-`+name+`">`) || !strings.Contains(body, "<h1>") {
		f.t.Errorf("GET %s: no <main id=\"page-%s\"> or no <h1>:\n%s", path, name, body)
	}
	return body
}

// get2 fetches a page that must answer 200.
func (f *fixture) get2(path string) string {
	f.t.Helper()
	code, body := f.get(path)
	if code != 200 {
		f.t.Fatalf("GET %s: %d\n%s", path, code, body)
	}
	return body
}

func checkHeaders(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	for k, want := range map[string]string{
		"Content-Security-Policy": "default-src 'none'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "same-origin",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %s = %q, want %q", what, k, got, want)
		}
	}
}

// hostile is a vault whose memory holds markup, a commitment, a next
// action and a session.
func hostile(t *testing.T) (*vault.Vault, *vault.Event) {
	v := testvault.New(t)
	testvault.Remember(t, v, `<script>alert(1)</script> the "quoted" fact`)
	var c *vault.Event
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		var err error
		c, err = memory.OpenCommitment(tx, memory.Input{Thread: "project:shop", Text: `ship <img src=x onerror=alert(3)>`})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	testvault.AppendMessage(t, v, "s1", "<script>alert(4)</script> a prompt")
	return v, c
}

// TestAuth tries every way in without the token or by another name: each
// is refused with 403 and the headers, and only an authorised request
// sets the cookie, which then authorises alone.
func TestAuth(t *testing.T) {
	t.Parallel()
	v, _ := hostile(t)
	f := serve(t, v, false)
	for name, mod := range map[string]func(r *http.Request){
		"no token":    func(r *http.Request) {},
		"bad token":   func(r *http.Request) { r.URL.RawQuery = "token=" + strings.Repeat("0", 64) },
		"short token": func(r *http.Request) { r.URL.RawQuery = "token=" + f.token[:63] },
		"empty token": func(r *http.Request) { r.URL.RawQuery = "token=" },
		"bad cookie":  func(r *http.Request) { r.AddCookie(&http.Cookie{Name: cookieName, Value: "x" + f.token[1:]}) },
		"other host": func(r *http.Request) {
			r.URL.RawQuery = "token=" + f.token
			r.Host = "evil.example:" + f.port
		},
		"other port": func(r *http.Request) {
			r.URL.RawQuery = "token=" + f.token
			r.Host = "127.0.0.1:1"
		},
		"no port": func(r *http.Request) {
			r.URL.RawQuery = "token=" + f.token
			r.Host = "localhost"
		},
	} {
		for _, path := range []string{"/", "/static/style.css", "/nodes/n_x", "/timeline"} {
			req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
			mod(req)
			resp, body := f.do(req)
			checkHeaders(t, name+" "+path, resp)
			if resp.StatusCode != 403 || strings.Contains(body, "alert") || resp.Header.Get("Set-Cookie") != "" {
				t.Errorf("%s %s: %d cookie %q\n%s", name, path, resp.StatusCode, resp.Header.Get("Set-Cookie"), body)
			}
		}
	}
	// The token in the URL sets the cookie; the cookie alone then works,
	// under localhost too.
	req, _ := http.NewRequest("GET", f.srv.URL+"/?token="+f.token, nil)
	resp, _ := f.do(req)
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			cookie = c
		}
	}
	if resp.StatusCode != 200 || cookie == nil || cookie.Value != f.token || !cookie.HttpOnly ||
		cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" {
		t.Fatalf("first request: %d %+v", resp.StatusCode, cookie)
	}
	req, _ = http.NewRequest("GET", f.srv.URL+"/timeline", nil)
	req.Host = "localhost:" + f.port
	req.AddCookie(cookie)
	if resp, body := f.do(req); resp.StatusCode != 200 || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("by cookie: %d %q\n%s", resp.StatusCode, resp.Header.Get("Set-Cookie"), body)
	}
}

// TestPagesEscape renders every page of a vault whose memory holds markup:
// each is the page it says, and no remembered tag reaches the HTML as a
// tag.
func TestPagesEscape(t *testing.T) {
	t.Parallel()
	v, c := hostile(t)
	f := serve(t, v, false)
	pages := map[string]string{
		"/":         "overview",
		"/timeline": "timeline",
		"/timeline?thread=project:shop&kind=commitment.open": "timeline",
		"/sessions/" + v.Config.Agent + "/s1":                "session",
		"/heads/MEMORY.md":                                   "head",
		"/heads/CONTINUITY.md":                               "head",
		"/heads/threads/project/shop.md":                     "head",
		"/continuity":                                        "continuity",
		"/recall?q=alert":                                    "recall",
		"/recall":                                            "recall",
	}
	for path, name := range pages {
		body := f.page(path, name)
		for _, bad := range []string{"<script>alert", "<img src=x", `"quoted"`} {
			if strings.Contains(body, bad) {
				t.Errorf("%s holds %q raw:\n%s", path, bad, body)
			}
		}
		checkOnlyOwnScript(t, path, body)
	}
	if body := f.page("/", "overview"); !strings.Contains(body, "ship &lt;img src=x onerror=alert(3)&gt;") ||
		!strings.Contains(body, c.ID[:12]) {
		t.Errorf("the overview does not show the open commitment as text:\n%s", body)
	}
	if body := f.page("/timeline", "timeline"); !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt; the &#34;quoted&#34; fact") {
		t.Errorf("the timeline does not show the fact as text:\n%s", body)
	}
	if body := f.page("/sessions/"+v.Config.Agent+"/s1", "session"); !strings.Contains(body, "&lt;script&gt;alert(4)&lt;/script&gt; a prompt") {
		t.Errorf("the session does not show its prompt as text:\n%s", body)
	}
}

// TestErrors: what names nothing is a 404 page, a malformed filter a 400
// page, both escaped and both under the same headers.
func TestErrors(t *testing.T) {
	t.Parallel()
	v, _ := hostile(t)
	f := serve(t, v, false)
	for path, want := range map[string]int{
		"/nodes/n_01zzzzzzzzzzzzzzzzzzzzzzzz":           404,
		"/nodes/nonsense":                               404,
		"/sessions/nobody/none":                         404,
		"/sessions/" + v.Config.Agent + "/s2":           404,
		"/sessions/..%2f..%2fetc/passwd":                404,
		"/heads/threads/project/nothere.md":             404, // no such thread
		"/heads/threads/project/shop.md?rev=HEAD~99":    404,
		"/heads/threads/project/../../memvault.toml":    307, // to /memvault.toml: not a head, 404
		"/heads/ledger/2026/01.jsonl":                   404,
		"/heads/memvault.toml":                          404,
		"/timeline?before=e_01zzzzzzzzzzzzzzzzzzzzzzzz": 404,
		"/timeline?since=yesterday":                     400,
		`/timeline?thread=a"><script>alert(2)</script>`: 400,
		"/heads/MEMORY.md?rev=0000000000":               404,
		"/heads/MEMORY.md?from=HEAD":                    400,
		"/nope":                                         404,
		"/commitments/e_x/close":                        404, // GET; and no --write
		"/static/nothing.js":                            404,
	} {
		code, body := f.get(path)
		if code != want {
			t.Errorf("GET %s: %d, want %d\n%s", path, code, want, body)
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, `"><script`) {
			t.Errorf("GET %s echoes markup:\n%s", path, body)
		}
		if code == 404 && !strings.Contains(body, "<main id=\"page-error\">") && !strings.HasPrefix(path, "/static/") {
			t.Errorf("GET %s: a 404 without the error page:\n%s", path, body)
		}
	}
}

// TestVaultInRepair tampers with a committed ledger line: the overview
// says prominently that the vault needs repair, and the other pages still
// render.
func TestVaultInRepair(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	testvault.Remember(t, v, "the queue holds five workers")
	testvault.Remember(t, v, "the cache is redis")
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(v.Root, filepath.FromSlash(st.Rows[0].File))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Replace(data, []byte("five workers"), []byte("nine workers"), 1)
	if bytes.Equal(tampered, data) {
		t.Fatal("nothing to tamper with")
	}
	if err := os.WriteFile(seg, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	f := serve(t, v, false)
	body := f.page("/", "overview")
	if !strings.Contains(body, `<div class="problem" id="health">`) || !strings.Contains(body, "memvault repair") {
		t.Errorf("the overview of a vault that needs repair does not say so:\n%s", body)
	}
	for path, name := range map[string]string{"/timeline": "timeline", "/continuity": "continuity",
		"/heads/MEMORY.md": "head", "/recall?q=cache": "recall"} {
		f.page(path, name)
	}
	// And a healthy vault's overview says it is fine.
	if body := serve(t, testvault.New(t), false).page("/", "overview"); !strings.Contains(body, `class="ok" id="health"`) {
		t.Errorf("a healthy overview:\n%s", body)
	}
}

// ownScript is the one script element a page may hold: the server's own
// live.js, by address, deferred.
const ownScript = `<script src="/static/live.js" defer></script>`

// handlerAttr finds an on… attribute in markup.
var handlerAttr = regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)

// checkOnlyOwnScript fails unless body's only script element is ownScript,
// once: no inline script, no other script, no handler attribute.
func checkOnlyOwnScript(t *testing.T, path, body string) {
	t.Helper()
	if n := strings.Count(strings.ToLower(body), "<script"); n != 1 || strings.Count(body, ownScript) != 1 {
		t.Errorf("%s holds %d script elements, want exactly one, %s:\n%s", path, n, ownScript, body)
	}
	if m := handlerAttr.FindString(body); m != "" {
		t.Errorf("%s holds an event handler attribute: %s", path, m)
	}
}

// TestStaticHasNoInlineCode: pages link their style and the one script of
// the server's own (static/live.js), hold no inline script, style or
// handler, and fetch nothing from another host; the static folder serves
// exactly the stylesheet and that script, and the script builds no code or
// markup from strings and asks nothing but this server.
func TestStaticHasNoInlineCode(t *testing.T) {
	t.Parallel()
	v, _ := hostile(t)
	f := serve(t, v, false)
	code, css := f.get("/static/style.css")
	if code != 200 || !strings.Contains(css, "body") {
		t.Fatalf("style.css: %d", code)
	}
	for _, path := range []string{"/", "/timeline", "/sessions", "/threads/project/shop", "/heads/MEMORY.md", "/continuity", "/recall?q=x"} {
		body := f.get2(path)
		for _, bad := range []string{"<style", "style=", "onclick", "http://", "https://", "//"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s holds %q", path, bad)
			}
		}
		checkOnlyOwnScript(t, path, body)
	}
	var served []string
	entries, err := staticFS.ReadDir("static")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		served = append(served, e.Name())
	}
	if strings.Join(served, " ") != "live.js style.css" {
		t.Errorf("the static folder serves %v, want exactly live.js and style.css", served)
	}
	code, js := f.get("/static/live.js")
	if code != 200 || !strings.Contains(js, "fetch('/live'") {
		t.Fatalf("live.js: %d\n%s", code, js)
	}
	for _, bad := range []string{"eval(", "Function(", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write",
		"setTimeout('", `setTimeout("`, "http:", "https:", "//" + "127", "import(", "WebSocket", "EventSource", "localStorage", "document.cookie"} {
		if strings.Contains(js, bad) {
			t.Errorf("live.js holds %q", bad)
		}
	}
	for _, m := range regexp.MustCompile(`fetch\(([^,)]*)`).FindAllStringSubmatch(js, -1) {
		if m[1] != "'/live'" && m[1] != "location.href" {
			t.Errorf("live.js fetches %s: only /live and the page itself", m[1])
		}
	}
}

// TestTimelineMemoryFirst: the timeline shows what was remembered; a
// session's start and a head's render are bookkeeping, shown with the
// toggle, when the kind filter names them, or when a link opens the page
// at one of them.
func TestTimelineMemoryFirst(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	testvault.Remember(t, v, "the queue is Postgres")
	started, err := v.Update(vault.TxOptions{Session: "s1"}, func(tx *vault.Tx) error {
		tx.Append(&vault.Event{Kind: vault.KindSessionStarted, Text: "claude-code session (startup)"})
		tx.Append(&vault.Event{Kind: vault.KindHeadRendered, Text: "MEMORY.md rendered"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f := serve(t, v, false)
	body := f.page("/timeline", "timeline")
	if !strings.Contains(body, "the queue is Postgres") || strings.Contains(body, "session.started") || strings.Contains(body, "head.rendered") {
		t.Errorf("the default timeline is not memory first:\n%s", body)
	}
	for _, path := range []string{"/timeline?bookkeeping=1", "/timeline?kind=session.started", "/timeline?at=" + started.Events[0].ID} {
		if body := f.page(path, "timeline"); !strings.Contains(body, "session.started") {
			t.Errorf("%s does not show the session's start:\n%s", path, body)
		}
	}
	if body := f.page("/timeline?bookkeeping=1", "timeline"); !strings.Contains(body, `name="bookkeeping" value="1" checked`) {
		t.Errorf("the toggle does not show it is on:\n%s", body)
	}
}
