package vault

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// threadGrammar is the thread key's grammar as the regular expression it
// was first written as; ParseThread checks it by hand (no compile at start)
// and must give the same answer for every string.
var threadGrammar = regexp.MustCompile(`^([a-z][a-z0-9-]{0,31}):([a-z0-9][a-z0-9._-]{0,127})$`)

func checkThreadGrammar(t *testing.T, s string) {
	t.Helper()
	th, err := ParseThread(s)
	m := threadGrammar.FindStringSubmatch(s)
	switch {
	case m == nil && err == nil:
		t.Fatalf("ParseThread(%q) = %v, the grammar refuses it", s, th)
	case m != nil && err != nil:
		t.Fatalf("ParseThread(%q): %v, the grammar accepts it", s, err)
	case m != nil && (th.Kind != m[1] || th.Slug != m[2]):
		t.Fatalf("ParseThread(%q) = %q %q, the grammar says %q %q", s, th.Kind, th.Slug, m[1], m[2])
	}
}

// TestParseThreadGrammar tries the edges of the grammar (lengths, first
// characters, the characters only a slug takes, a second colon, trailing
// newlines, upper case and non-ASCII) and random strings over the
// characters that matter.
func TestParseThreadGrammar(t *testing.T) {
	k32, k33 := "k"+strings.Repeat("a", 31), "k"+strings.Repeat("a", 32)
	s128, s129 := strings.Repeat("s", 128), strings.Repeat("s", 129)
	for _, s := range []string{
		"", ":", "a:", ":a", "a:b", "project:shop", "person:alice", "a:b:c", "a::b",
		"a-b:c", "-a:b", "1a:b", "a1:b", "a_b:c", "a.b:c", "a:-b", "a:.b", "a:_b", "a:1b",
		"a:b-c.d_e", "A:b", "a:B", "é:b", "a:é", "a:b\n", "a\n:b", " a:b", "a:b ", "a:b\x00",
		k32 + ":x", k33 + ":x", "a:" + s128, "a:" + s129, "a:ſ", "ſ:a", "a:\u212a",
	} {
		checkThreadGrammar(t, s)
	}
	alphabet := []byte("az09-._:A \n\xc3")
	r := rand.New(rand.NewPCG(22, 22))
	for i := 0; i < 200000; i++ {
		b := make([]byte, r.IntN(12))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		checkThreadGrammar(t, string(b))
	}
}
