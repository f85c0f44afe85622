package hooks

import (
	"regexp"
	"strings"
	"sync"
	"testing"
)

// summaryBlock, stripHookContext and slugify were regular expressions
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

// oldSlugify is slugify as it was, with `[^a-z0-9._-]+`.
var oldSlugRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9._-]+`) })

func oldSlugify(s string) string {
	s = oldSlugRE().ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "-._")
	if len(s) > 64 {
		s = strings.Trim(s[:64], "-._")
	}
	return s
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
	mixes(t, []string{"<summary>", "</summary>", " ", "\n", "x", "\xff"}, 4, func(s string) {
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
	mixes(t, []string{"<hook_context>", "</hook_context>", " ", "\n", "\v", "x", "\xff"}, 4, func(s string) {
		if got, old := stripHookContext(s), oldHookContext(s); got != old {
			t.Errorf("stripHookContext(%q) = %q, the expression gave %q", s, got, old)
		}
	})
}

func TestSlugify(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"shop", "shop"},
		{"My Shop", "my-shop"},
		{"my  shop!!", "my-shop"},
		{"a-€b", "a--b"},
		{"Café Über", "caf-ber"},
		{"v1.2_beta", "v1.2_beta"},
		{"--.x._--", "x"},
		{"\xffab\xfe", "ab"},
		{"日本", ""},
		{strings.Repeat("ab", 40), strings.Repeat("ab", 32)},
		{strings.Repeat("a", 63) + " x", strings.Repeat("a", 63)},
	}
	for _, c := range cases {
		if got := slugify(c.in); got != c.want {
			t.Errorf("slugify(%q) = %q, want %q", c.in, got, c.want)
		}
		if old := oldSlugify(c.in); old != c.want {
			t.Errorf("table disagrees with the old expression on %q: %q", c.in, old)
		}
	}
	mixes(t, []string{"a", "Z", "-", ".", " ", "é", "\xff", "İ"}, 5, func(s string) {
		if got, old := slugify(s), oldSlugify(s); got != old {
			t.Errorf("slugify(%q) = %q, the expression gave %q", s, got, old)
		}
	})
}

// mixes calls f with every string of up to n pieces.
func mixes(t *testing.T, pieces []string, n int, f func(string)) {
	t.Helper()
	var walk func(prefix string, left int)
	walk = func(prefix string, left int) {
		f(prefix)
		if left == 0 || t.Failed() {
			return
		}
		for _, p := range pieces {
			walk(prefix+p, left-1)
		}
	}
	walk("", n)
}
