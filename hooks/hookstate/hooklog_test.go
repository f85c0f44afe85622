package hookstate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/testvault"
)

func TestAppendHookLog(t *testing.T) {
	v := testvault.New(t)
	if err := AppendHookLog(v.Root, "codex stop s1: first\nsecond"); err != nil {
		t.Fatal(err)
	}
	if err := AppendHookLog(v.Root, "again"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(v.Root, ".logs", "hooks.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], " codex stop s1: first second") || !strings.HasSuffix(lines[1], " again") {
		t.Fatalf("log:\n%s", data)
	}
	stamp, _, _ := strings.Cut(lines[0], " ")
	if _, err := time.Parse(time.RFC3339, stamp); err != nil {
		t.Fatalf("line starts with %q: %v", stamp, err)
	}
}

// TestHookLogRedacted: a log line that quotes a credential (a payload's
// session id, an error that quotes the input) is written redacted.
func TestHookLogRedacted(t *testing.T) {
	root := t.TempDir() // no vault: the log is written when none opens
	line := "claude-code prompt-submit ghp_Zq3xK9mW2pL7vN4rT8yB1cF6hJ0dS5gA2eQw: session: holds a credential\nAKIAIOSFODNN7EXAMPLE"
	if err := AppendHookLog(root, line); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, ".logs", "hooks.log"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	if strings.Contains(got, "Zq3xK9mW2pL7") || strings.Contains(got, "IOSFODNN7EXAMPLE") || !strings.Contains(got, "[REDACTED:github-token]") {
		t.Errorf("hooks.log = %q", got)
	}
	if strings.Count(got, "\n") != 1 {
		t.Errorf("not one line: %q", got)
	}
}
