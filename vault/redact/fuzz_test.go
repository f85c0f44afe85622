package redact

import "testing"

// FuzzRedact checks that redaction never panics, never leaves a default
// pattern matching, and is stable under a second pass.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"password=hunter2", "AKIAIOSFODNN7EXAMPLE", "-----BEGIN PRIVATE KEY-----\nabc", "Authorization: Bearer abcdefghijklmnop1", "plain prose"} {
		f.Add(s)
	}
	rules := DefaultRules()
	f.Fuzz(func(t *testing.T, s string) {
		out, counts := Text(s, rules)
		again, c2 := Text(out, rules)
		if again != out || len(c2) != 0 {
			t.Fatalf("second pass changed %q to %q (%v)", out, again, c2)
		}
		total := 0
		for _, n := range counts {
			total += n
		}
		if total == 0 && out != s {
			t.Fatalf("text changed without a count: %q -> %q", s, out)
		}
	})
}
