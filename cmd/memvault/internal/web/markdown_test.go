package web

import (
	"regexp"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/testvault"
)

// TestHeadRenderedMarkdown: MEMORY.md, CONTINUITY.md and a thread's head
// are shown as HTML (headings and lists, no raw `## `), a row whose text
// is markup stays text, the ids link to their pages, and the toggle shows
// the Markdown as it is.
func TestHeadRenderedMarkdown(t *testing.T) {
	t.Parallel()
	v, c := hostile(t)
	fact := testvault.Remember(t, v, "the cache is <b>redis</b> ![x](http://evil.example/x.png) [j](javascript:alert(5))")
	_, err := continuity.UpdateContinuity(v, continuity.ContinuityOptions{Trigger: "test"}, func(ct *continuity.ContinuityTx) error {
		_, err := ct.Decide(continuity.DecideInput{Decision: "use <script>alert(6)</script> WAL", Rationale: "fast"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := heads.Refresh(v, heads.RefreshOptions{Trigger: "render", Memory: true}); err != nil {
		t.Fatal(err)
	}
	f := serve(t, v, false)
	for _, path := range []string{"/heads/MEMORY.md", "/heads/CONTINUITY.md", "/heads/threads/project/shop.md"} {
		body := f.page(path, "head")
		html := between(body, `<div class="md" id="head-html">`, `</div>`)
		if html == "" {
			t.Errorf("%s: no rendered head:\n%s", path, body)
			continue
		}
		if strings.Contains(body, "## ") || !strings.Contains(html, "<h2>") || !strings.Contains(html, "<li>") {
			t.Errorf("%s: not rendered as headings and lists:\n%s", path, html)
		}
		for _, bad := range []string{"<script", "<b>", "<img", "javascript:", "evil.example/x.png\"><", "<!--"} {
			if strings.Contains(html, bad) {
				t.Errorf("%s: the rendered head holds %q:\n%s", path, bad, html)
			}
		}
		if tag := regexp.MustCompile(`<[a-z]+[^>]*\son[a-z]+=`).FindString(html); tag != "" {
			t.Errorf("%s: the rendered head holds a handler: %s", path, tag)
		}
		if raw := f.page(path+"?raw=1", "head"); !strings.Contains(raw, `<pre id="head-text">`) || !strings.Contains(raw, "## ") ||
			!strings.Contains(raw, `href="/`+path[1:]+`"`) {
			t.Errorf("%s?raw=1: not the Markdown with a way back:\n%s", path, raw)
		}
	}
	mem := between(f.page("/heads/MEMORY.md", "head"), `<div class="md" id="head-html">`, `</div>`)
	for _, want := range []string{
		"the cache is &lt;b&gt;redis&lt;/b&gt;",
		`&lt;script&gt;alert(1)&lt;/script&gt; the &quot;quoted&quot; fact`,
		`href="/timeline?at=` + fact.ID + `"`,
		`href="/timeline?at=` + c.ID + `"`,
	} {
		if !strings.Contains(mem, want) {
			t.Errorf("MEMORY.md rendered lacks %q:\n%s", want, mem)
		}
	}
	// Every id the head names is a link: none is left as code.
	if ids := regexp.MustCompile(`<code>[en]_[0-9a-z]{26}</code>`).FindAllString(mem, -1); len(ids) > 0 {
		t.Errorf("ids left unlinked: %v", ids)
	}
	cont := between(f.page("/heads/CONTINUITY.md", "head"), `<div class="md" id="head-html">`, `</div>`)
	if !strings.Contains(cont, "&lt;script&gt;alert(6)&lt;/script&gt; WAL") {
		t.Errorf("CONTINUITY.md rendered lacks the decision as text:\n%s", cont)
	}
}

// between is the text of s between the first from and the next to.
func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	in, _, _ := strings.Cut(rest, to)
	return in
}
