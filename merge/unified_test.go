package merge

import (
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnifiedMatchesGit: the diff is the one `git diff --no-index` prints
// (without the indent heuristic, a later pass git merge-file does not
// make), hunk headers and all, on random files with repeated lines.
func TestUnifiedMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(17))
	words := []string{"{", "}", "a", "b", "", "  \"x\": 1,", "c"}
	gen := func() string {
		var b strings.Builder
		for range rng.Intn(30) {
			b.WriteString(words[rng.Intn(len(words))] + "\n")
		}
		if rng.Intn(4) == 0 {
			b.WriteString("tail")
		}
		return b.String()
	}
	for i := range 200 {
		a, b := gen(), gen()
		pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		os.WriteFile(pa, []byte(a), 0o644)
		os.WriteFile(pb, []byte(b), 0o644)
		cmd := exec.Command("git", "diff", "--no-index", "--no-color", "--no-indent-heuristic", "-U3", "a", "b")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		want, _ := cmd.Output()
		w := string(want)
		if j := strings.Index(w, "--- a/a\n"); j >= 0 {
			w = w[j:]
		} else {
			w = ""
		}
		got := string(Unified("a/a", "b/b", []byte(a), []byte(b), 3))
		if got != w {
			t.Fatalf("case %d:\n%q\n%q\ngit:\n%s\nours:\n%s", i, a, b, w, got)
		}
	}
}
