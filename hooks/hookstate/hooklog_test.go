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
