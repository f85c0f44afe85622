package web

import (
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

// TestThreadAndSessionPages: a person browses from the overview to each
// thread's page and to the sessions: a thread's page shows its head
// rendered, its own memory and not another thread's, and the sessions that
// wrote to it; the sessions page lists every session, from the rows and
// from the stored transcripts, the most recently active first; a thread
// that does not exist, or is no thread key, is a 404 that echoes nothing
// as markup.
func TestThreadAndSessionPages(t *testing.T) {
	t.Parallel()
	v := testvault.New(t)
	write := func(session, thread, text string) {
		t.Helper()
		_, err := v.Update(vault.TxOptions{Session: session}, func(tx *vault.Tx) error {
			_, err := memory.Remember(tx, memory.Input{Thread: thread, Text: text})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	write("sess-shop", "project:shop", "the cart keeps <b>prices</b> in cents")
	write("sess-blog", "project:blog", "the blog is static")
	write("sess-shop", "project:shop", "checkout retries twice")
	testvault.AppendMessage(t, v, "sess-only-transcript", "a prompt with no row")
	f := serve(t, v, false)

	over := f.page("/", "overview")
	for _, link := range []string{`href="/threads/project/shop"`, `href="/threads/project/blog"`, `href="/sessions"`,
		`href="/sessions/` + v.Config.Agent + `/sess-shop"`} {
		if !strings.Contains(over, link) {
			t.Errorf("the overview has no link %s:\n%s", link, over)
		}
	}
	shop := f.page("/threads/project/shop", "thread")
	for _, want := range []string{"the cart keeps &lt;b&gt;prices&lt;/b&gt; in cents", "checkout retries twice",
		`id="thread-head"`, `href="/sessions/` + v.Config.Agent + `/sess-shop"`, `href="/heads/threads/project/shop.md"`,
		`href="/timeline?thread=project%3Ashop"`} {
		if !strings.Contains(shop, want) {
			t.Errorf("the shop thread's page does not hold %s:\n%s", want, shop)
		}
	}
	for _, not := range []string{"the blog is static", "sess-blog", "<b>prices", "\n## "} {
		if strings.Contains(shop, not) {
			t.Errorf("the shop thread's page holds %q:\n%s", not, shop)
		}
	}
	list := f.page("/sessions", "sessions")
	i, j, k := strings.Index(list, "sess-shop"), strings.Index(list, "sess-blog"), strings.Index(list, "sess-only-transcript")
	if i < 0 || j < 0 || k < 0 || i > j {
		t.Errorf("the sessions page does not list the three sessions, the last active first (%d %d %d):\n%s", i, j, k, list)
	}
	for path, want := range map[string]int{
		"/threads/project/nothere":                     404,
		"/threads/Project/shop":                        404,
		"/threads/project/..":                          307, // to /threads: not a page
		`/threads/project/"><script>alert(1)</script>`: 404,
		"/threads/project":                             404,
	} {
		code, body := f.get(path)
		if code != want || strings.Contains(body, "<script>") {
			t.Errorf("GET %s: %d, want %d, no markup echoed:\n%s", path, code, want, body)
		}
	}
}
