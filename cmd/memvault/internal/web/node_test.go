package web

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Every line of a lineage box fits the columns the box holds, whatever
// the text: ASCII, CJK and emoji (two columns each), combining marks
// (none), a cut that falls inside a wide rune. Chromium measures the
// drawing itself in TestE2EWebBrowser.
func TestClipFitsTheBox(t *testing.T) {
	width := func(s string) int {
		n := 0
		for _, r := range s {
			n += columns(r)
		}
		return n
	}
	for _, s := range []string{
		"", "short", strings.Repeat("W", 200), "session-summary n_01m86tzfd7",
		strings.Repeat("記憶", 40), strings.Repeat("a記", 40), strings.Repeat("🧠", 40),
		strings.Repeat("e\u0301", 60), "x" + strings.Repeat("한", 30),
	} {
		got := clip(s, boxCols)
		if w := width(got); w > boxCols {
			t.Errorf("clip(%.20q…) = %q: %d columns, the box holds %d", s, got, w, boxCols)
		}
		if !utf8.ValidString(got) {
			t.Errorf("clip(%.20q…) = %q: not UTF-8", s, got)
		}
		if width(s) <= boxCols && got != s {
			t.Errorf("clip(%q) = %q: a text that fits is kept whole", s, got)
		}
		if width(s) > boxCols && (!strings.HasSuffix(got, "…") || !strings.HasPrefix(s, strings.TrimSuffix(got, "…"))) {
			t.Errorf("clip(%.20q…) = %q: want a prefix and …", s, got)
		}
	}
}
