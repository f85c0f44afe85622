package hooks

import (
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/memvault/memvault/vault/vaulttest"
)

// summaryBlock and stripHookContext were regular expressions
// compiled when the package loaded; they are plain string code now. These
// tables pin what the expressions did, and each case, and every short mix of
// the tricky pieces, is also checked against the old expression itself.

// oldSummary is what summaryBlock did with `(?s)<summary>(.*?)</summary>`.
var oldSummaryRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)<summary>(.*?)</summary>`) })

func oldSummary(s string) string {
	if m := oldSummaryRE().FindStringSubmatch(s); m != nil && strings.TrimSpace(m[1]) != "" {
		return strings.TrimSpace(m[1])
	}
	return s
}

// oldHookContext is what Parse did to a prompt with
// `(?s)^<hook_context>.*?</hook_context>\s*` before trimming it.
var oldHookContextRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)^<hook_context>.*?</hook_context>\s*`) })

func oldHookContext(s string) string {
	return oldHookContextRE().ReplaceAllString(s, "")
}

func TestSummaryBlock(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"no block at all", "no block at all"},
		{"<analysis>x</analysis>\n<summary>\n  the gist \n</summary>", "the gist"},
		{"<summary>first</summary> <summary>second</summary>", "first"},
		{"<summary>a\nb</summary>", "a\nb"},
		{"<summary>   </summary>", "<summary>   </summary>"},
		{"<summary>unclosed", "<summary>unclosed"},
		{"</summary> then <summary>x</summary>", "x"},
		{"<summary><summary>inner</summary>", "<summary>inner"},
		{"<summary></summary><summary>later</summary>", "<summary></summary><summary>later</summary>"},
		{"<SUMMARY>case</SUMMARY>", "<SUMMARY>case</SUMMARY>"},
		{"<summary>\xff bad utf-8 \xfe</summary>", "\xff bad utf-8 \xfe"},
	}
	for _, c := range cases {
		if got := summaryBlock(c.in); got != c.want {
			t.Errorf("summaryBlock(%q) = %q, want %q", c.in, got, c.want)
		}
		if old := oldSummary(c.in); old != c.want {
			t.Errorf("table disagrees with the old expression on %q: %q", c.in, old)
		}
	}
	vaulttest.Mixes(t, []string{"<summary>", "</summary>", " ", "\n", "x", "\xff"}, 4, func(s string) {
		if got, old := summaryBlock(s), oldSummary(s); got != old {
			t.Errorf("summaryBlock(%q) = %q, the expression gave %q", s, got, old)
		}
	})
}

func TestStripHookContext(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"plain prompt", "plain prompt"},
		{"<hook_context>memory</hook_context>\n\nthe prompt", "the prompt"},
		{"<hook_context>a\nb</hook_context>x", "x"},
		{"<hook_context>one</hook_context> <hook_context>two</hook_context> p", "<hook_context>two</hook_context> p"},
		{" <hook_context>leading space</hook_context>p", " <hook_context>leading space</hook_context>p"},
		{"<hook_context>never closed", "<hook_context>never closed"},
		{"<hook_context></hook_context>", ""},
		{"<hook_context>x</hook_context>\t\r\f\n \vp", "\vp"},
		{"<hook_context>x</hook_context>\u00a0p", "\u00a0p"},
		{"p <hook_context>x</hook_context>", "p <hook_context>x</hook_context>"},
	}
	for _, c := range cases {
		if got := stripHookContext(c.in); got != c.want {
			t.Errorf("stripHookContext(%q) = %q, want %q", c.in, got, c.want)
		}
		if old := oldHookContext(c.in); old != c.want {
			t.Errorf("table disagrees with the old expression on %q: %q", c.in, old)
		}
	}
	vaulttest.Mixes(t, []string{"<hook_context>", "</hook_context>", " ", "\n", "\v", "x", "\xff"}, 4, func(s string) {
		if got, old := stripHookContext(s), oldHookContext(s); got != old {
			t.Errorf("stripHookContext(%q) = %q, the expression gave %q", s, got, old)
		}
	})
}
