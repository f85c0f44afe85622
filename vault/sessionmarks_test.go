package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

func marks(t *testing.T, v *Vault, ref TranscriptRef) string {
	t.Helper()
	m, err := v.SessionMarks(ref)
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
	v := newVault(t)
	a := TranscriptRef{Agent: "default", Session: "s1"}
	b := TranscriptRef{Agent: "default", Session: "s2"}
	if got := marks(t, v, a); got != "[]" {
		t.Fatalf("a new session has marks %s", got)
	}
	if err := v.AddSessionMarks(a, "e_2", "e_1"); err != nil {
		t.Fatal(err)
	}
	if err := v.AddSessionMarks(a, "e_1", "n_3"); err != nil {
		t.Fatal(err)
	}
	if err := v.AddSessionMarks(b, "e_9"); err != nil {
		t.Fatal(err)
	}
	if got := marks(t, v, a); got != "[e_1 e_2 n_3]" {
		t.Fatalf("marks of s1: %s", got)
	}
	// The file older binaries read: a sorted JSON array under .state/hooks/.
	data, err := os.ReadFile(v.sessionMarksPath(a))
	if err != nil || string(data) != `["e_1","e_2","n_3"]` {
		t.Fatalf("file: %s %v", data, err)
	}
	if filepath.Dir(v.sessionMarksPath(a)) != filepath.Join(v.Root, ".state", "hooks") {
		t.Fatalf("marks kept in %s", v.sessionMarksPath(a))
	}
	if err := v.ResetSessionMarks(a); err != nil {
		t.Fatal(err)
	}
	if err := v.ResetSessionMarks(a); err != nil {
		t.Fatalf("a second reset: %v", err)
	}
	if got := marks(t, v, a); got != "[]" {
		t.Fatalf("marks of s1 after reset: %s", got)
	}
	if got := marks(t, v, b); got != "[e_9]" {
		t.Fatalf("the reset of s1 touched s2: %s", got)
	}
	// Scratch that does not parse costs a repeat, never an error.
	os.WriteFile(v.sessionMarksPath(b), []byte("{torn"), 0o600)
	if got := marks(t, v, b); got != "[]" {
		t.Fatalf("torn marks read as %s", got)
	}
}
