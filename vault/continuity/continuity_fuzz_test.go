package continuity

import (
	"strings"
	"testing"
)

// FuzzParseContinuity: no CONTINUITY.md, however hand-mangled, makes the
// parser panic, and every line it keeps is a line of the file.
func FuzzParseContinuity(f *testing.F) {
	f.Add([]byte("# CONTINUITY\n\n## Active Goal\nship it\n\n## Next Actions\n- one\n- two\n\n## Mine\nkept\n"))
	f.Add([]byte("```\n## not a heading\n```\n## Active Blockers\n- x\r\n"))
	f.Add([]byte("no sections at all"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := parseContinuity(data)
		text := strings.ReplaceAll(string(data), "\r\n", "\n")
		for _, group := range []map[string][]string{p.Sections, p.Unknown} {
			for _, lines := range group {
				for _, l := range lines {
					if !strings.Contains(text, strings.TrimSpace(l)) {
						t.Fatalf("kept %q, which is not in the file", l)
					}
				}
			}
		}
	})
}
