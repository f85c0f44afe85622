package web

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

// A commitment closed through the web view's write route leaves the
// heads that listed it: the server's Refresher (inline here; the command
// line's default starts the worker) brings MEMORY.md and the thread's head
// up to date, and no head is left stale. A refused close refreshes nothing.
func TestWriteRouteRefreshesHeads(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	var c *vault.Event
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		var err error
		c, err = memory.OpenCommitment(tx, memory.Input{Thread: "project:shop", Text: "ship the invoices by friday"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := heads.Refresh(v, heads.RefreshOptions{Memory: true, AllThreads: true}); err != nil {
		t.Fatal(err)
	}
	holds := func(head string) bool {
		data, err := os.ReadFile(filepath.Join(v.Root, head))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(data), "ship the invoices by friday")
	}
	if !holds(vault.MemoryHead) || !holds("threads/project/shop.md") {
		t.Fatal("the heads do not list the open commitment: the test sees nothing")
	}
	token := NewToken()
	s, err := New(Options{Root: v.Root, Write: true, Token: token, Refresh: hooks.Refresher{Mode: hooks.RefreshInline}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	port := ts.Listener.Addr().(*net.TCPAddr).Port
	ts.Config.Handler = s.Handler(port)
	ts.Start()
	t.Cleanup(ts.Close)
	f := &fixture{t: t, v: v, srv: ts, token: token}
	_, f.port, _ = net.SplitHostPort(ts.Listener.Addr().String())
	post := func(csrf string) *http.Response {
		form := url.Values{"csrf": {csrf}, "note": {"sent"}}
		req, _ := http.NewRequest("POST", ts.URL+"/commitments/"+c.ID+"/close?token="+token, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://127.0.0.1:"+f.port)
		resp, _ := f.do(req)
		return resp
	}
	if resp := post("wrong"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a close with a bad CSRF token: %d", resp.StatusCode)
	}
	if !holds(vault.MemoryHead) {
		t.Fatal("a refused close changed MEMORY.md")
	}
	if resp := post(csrfToken(token)); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("close: %d", resp.StatusCode)
	}
	if holds(vault.MemoryHead) || holds("threads/project/shop.md") {
		t.Error("a head still lists the commitment the web view closed")
	}
	if stale, err := heads.StaleHeads(v); err != nil || len(stale) > 0 {
		t.Errorf("stale heads after the close: %v %v", stale, err)
	}
}
