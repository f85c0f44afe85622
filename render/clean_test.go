package render

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// cleanWhole is clean as it was first written: the whole text folded.
func cleanWhole(s string, max int) string {
	return neutralise(strings.Join(strings.Fields(s), " "), max)
}

// Folding only the start of a long text gives what folding all of it gives.
func TestCleanFoldsOnlyWhatItKeeps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	parts := []string{"a", "bé", " ", "  ", "\n", "\t", "<!--", "-->", "-", "<", "!", "#", "> ", "[ ]", "é", "漢"}
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for n := r.IntN(60); n > 0; n-- {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		max := 2 + r.IntN(20)
		if got, want := clean(b.String(), max), cleanWhole(b.String(), max); got != want {
			t.Fatalf("clean(%q, %d) = %q, want %q", b.String(), max, got, want)
		}
	}
}
