package recall

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSnippetOnWords: a snippet starts and ends on a word, wherever the
// query's word falls, and carries no harness markup.
func TestSnippetOnWords(t *testing.T) {
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu")
	build := func(shift int) string {
		var b strings.Builder
		for i := range 12 {
			for _, w := range words {
				b.WriteString(w)
				if i == 6 && w == "kilo" { // the word boundaries before the needle fall everywhere
					b.WriteString(strings.Repeat("x", shift) + " needle")
				}
				b.WriteByte(' ')
			}
		}
		return b.String()
	}
	text := build(0)
	for shift := range 9 {
		in := build(shift)
		got := snippet(in, "needle")
		if !strings.Contains(got, "needle") || utf8.RuneCountInString(got) > 241 {
			t.Fatalf("snippet %q", got)
		}
		body := strings.TrimSuffix(strings.TrimPrefix(got, "…"), "…")
		for _, w := range strings.Fields(body) {
			if w != "needle" && !strings.Contains(" "+text+" ", " "+w+" ") && !strings.HasPrefix(w, "kilo") {
				t.Errorf("shift %d: snippet holds a cut word %q: %q", shift, w, got)
			}
		}
	}
	got := snippet("<command-name>/compact</command-name> <command-message>compact</command-message> "+text, "zulu")
	if strings.Contains(got, "<command") || strings.Contains(got, "compact</") {
		t.Errorf("markup in the snippet: %q", got)
	}
	if got := snippet("<system-reminder>tools</system-reminder> short text", "short"); got != "short text" {
		t.Errorf("short snippet %q", got)
	}
}
