package hookstate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/transcript"
)

func marks(t *testing.T, v *vault.Vault, ref transcript.Ref) string {
	t.Helper()
	m, err := SessionMarks(v, ref)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return fmt.Sprint(ids)
}

func TestSessionMarksRoundTripAndReset(t *testing.T) {
	v := testvault.New(t)
	a := transcript.Ref{Agent: "default", Session: "s1"}
	b := transcript.Ref{Agent: "default", Session: "s2"}
	if got := marks(t, v, a); got != "[]" {
		t.Fatalf("a new session has marks %s", got)
	}
	if err := AddSessionMarks(v, a, "e_2", "e_1"); err != nil {
		t.Fatal(err)
	}
	if err := AddSessionMarks(v, a, "e_1", "n_3"); err != nil {
		t.Fatal(err)
	}
	if err := AddSessionMarks(v, b, "e_9"); err != nil {
		t.Fatal(err)
	}
	if got := marks(t, v, a); got != "[e_1 e_2 n_3]" {
		t.Fatalf("marks of s1: %s", got)
	}
	// The file older binaries read: a sorted JSON array under .state/hooks/.
	data, err := os.ReadFile(sessionMarksPath(v, a))
	if err != nil || string(data) != `["e_1","e_2","n_3"]` {
		t.Fatalf("file: %s %v", data, err)
	}
	if filepath.Dir(sessionMarksPath(v, a)) != filepath.Join(v.Root, ".state", "hooks") {
		t.Fatalf("marks kept in %s", sessionMarksPath(v, a))
	}
	if err := ResetSessionMarks(v, a); err != nil {
		t.Fatal(err)
	}
	if err := ResetSessionMarks(v, a); err != nil {
		t.Fatalf("a second reset: %v", err)
	}
	if got := marks(t, v, a); got != "[]" {
		t.Fatalf("marks of s1 after reset: %s", got)
	}
	if got := marks(t, v, b); got != "[e_9]" {
		t.Fatalf("the reset of s1 touched s2: %s", got)
	}
	// Scratch that does not parse costs a repeat, never an error.
	os.WriteFile(sessionMarksPath(v, b), []byte("{torn"), 0o600)
	if got := marks(t, v, b); got != "[]" {
		t.Fatalf("torn marks read as %s", got)
	}
}
