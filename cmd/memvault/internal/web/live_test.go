package web

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

// pageVersion is the version a page was rendered at.
var pageVersion = regexp.MustCompile(`<meta name="memvault-version" content="([0-9a-f]+)">`)

// TestLive: /live answers the vault's version as an ETag, 304 while the
// request names it, and a new one after a write, a transcript's append
// and a head's refresh; each page carries the version it was read at. The
// route is behind the guard like every page (no token, a bad cookie,
// another Host: 403, and no version), refuses a fetch another site's page
// makes, and takes no other method.
func TestLive(t *testing.T) {
	t.Parallel()
	v, _ := hostile(t)
	f := serve(t, v, false)
	live := func(inm string, mod func(*http.Request)) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", f.srv.URL+"/live?token="+f.token, nil)
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		if mod != nil {
			mod(req)
		}
		resp, body := f.do(req)
		checkHeaders(t, "/live", resp)
		return resp.StatusCode, resp.Header.Get("ETag"), body
	}
	code, etag, body := live("", nil)
	if code != 200 || etag == "" || `"`+strings.TrimSpace(body)+`"` != etag {
		t.Fatalf("/live: %d, ETag %q, body %q", code, etag, body)
	}
	m := pageVersion.FindStringSubmatch(f.page("/timeline", "timeline"))
	if m == nil || `"`+m[1]+`"` != etag {
		t.Fatalf("the timeline's version %v is not /live's %s", m, etag)
	}
	if code, _, body := live(etag, nil); code != 304 || body != "" {
		t.Errorf("/live with If-None-Match %s, nothing written: %d %q, want 304 and no body", etag, code, body)
	}
	if code, _, _ := live(`"0123"`, nil); code != 200 {
		t.Errorf("/live with a stale version: %d, want 200", code)
	}
	// Each kind of change moves the version.
	for name, change := range map[string]func(){
		"a row":                 func() { testvault.Remember(t, v, "a row written while the page is open") },
		"a transcript's append": func() { testvault.AppendMessage(t, v, "s9", "a prompt while the page is open") },
		"a hand edit of MEMORY.md, not committed": func() {
			appendFile(t, filepath.Join(v.Root, "MEMORY.md"), "- a line typed by hand\n")
		},
		"a hand edit of CONTINUITY.md, not committed": func() {
			appendFile(t, filepath.Join(v.Root, "CONTINUITY.md"), "- a line typed by hand\n")
		},
	} {
		change()
		code, next, _ := live(etag, nil)
		if code != 200 || next == etag {
			t.Errorf("after %s, /live with the old version: %d, ETag %s, want 200 and a new one", name, code, next)
		}
		etag = next
	}
	// After git packed the refs (a gc), a write still moves the version.
	if out, err := exec.Command("git", "-C", v.Root, "pack-refs", "--all").CombinedOutput(); err != nil {
		t.Fatalf("git pack-refs: %v\n%s", err, out)
	}
	_, packed, _ := live("", nil)
	if code, _, _ := live(packed, nil); code != 304 {
		t.Errorf("/live after pack-refs, nothing written: %d, want 304", code)
	}
	testvault.Remember(t, v, "a row after the refs were packed")
	if code, next, _ := live(packed, nil); code != 200 || next == packed {
		t.Errorf("/live after a write on packed refs: %d, ETag %s, want 200 and a new one", code, next)
	}
	// The guard: no token, a bad cookie, another Host; another site's fetch.
	for name, mod := range map[string]func(*http.Request){
		"no token": func(r *http.Request) { r.URL.RawQuery = "" },
		"bad cookie": func(r *http.Request) {
			r.URL.RawQuery = ""
			r.AddCookie(&http.Cookie{Name: cookieName, Value: strings.Repeat("0", 64)})
		},
		"other host": func(r *http.Request) { r.Host = "evil.example:" + f.port },
		"rebinding":  func(r *http.Request) { r.Host = "127.0.0.1.evil.example:" + f.port },
		"cross-site": func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
		"same-site":  func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") },
	} {
		code, tag, body := live("", mod)
		if code != 403 || tag != "" || strings.Contains(body, strings.Trim(etag, `"`)) {
			t.Errorf("/live, %s: %d, ETag %q, want 403 and no version:\n%s", name, code, tag, body)
		}
	}
	for _, method := range []string{"POST", "PUT", "DELETE"} {
		req, _ := http.NewRequest(method, f.srv.URL+"/live?token="+f.token, nil)
		if resp, body := f.do(req); resp.StatusCode != 404 && resp.StatusCode != 405 || strings.Contains(body, strings.Trim(etag, `"`)) {
			t.Errorf("%s /live: %d, want 404 or 405 and no version", method, resp.StatusCode)
		}
	}
	// An error page carries no version and so no live script.
	if _, body := f.get("/nodes/nonsense"); strings.Contains(body, "memvault-version") || strings.Contains(body, "<script") {
		t.Errorf("the 404 page is kept live:\n%s", body)
	}
}

// BenchmarkLivePoll is what an open page costs the server while nothing
// changes: a /live poll answered 304, beside a render of the timeline
// (what a reload would cost), on a vault of 500 rows.
func BenchmarkLivePoll(b *testing.B) {
	v := testvault.New(b)
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		for i := range 500 {
			tx.Append(&vault.Event{Kind: "fact", Text: "row " + strconv.Itoa(i)})
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	token := NewToken()
	s, err := New(Options{Root: v.Root, Token: token})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler(80)
	version, _ := liveVersion(v.Root)
	for _, c := range []struct{ name, path string }{{"live-304", "/live"}, {"timeline", "/timeline"}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				req := httptest.NewRequest("GET", "http://127.0.0.1:80"+c.path+"?token="+token, nil)
				req.Header.Set("If-None-Match", `"`+version+`"`)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if c.name == "live-304" && w.Code != 304 {
					b.Fatalf("/live: %d", w.Code)
				}
			}
		})
	}
}

// appendFile appends text to the file at path, as an editor's save would
// leave it.
func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
