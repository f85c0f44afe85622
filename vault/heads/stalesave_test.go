package heads

import (
	"os"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

// A person's editor opened MEMORY.md, memvault rendered it again twice
// while they typed, and they saved: their file carries the older render's
// Decisions next to their own line under Blockers. Their save is no edit of
// Decisions, so the next refresh takes the new render's Decisions, keeps
// their line, and records no head.conflict.
func TestStaleEditorSaveIsNoConflict(t *testing.T) {
	v := testvault.New(t)
	rememberIn(t, v, "decision", "project:shop", "s1", "use WAL")
	refresh(t, v, "s1")
	p := v.Abs(vault.MustRel(vault.MemoryHead))
	buffer, err := os.ReadFile(p) // the editor's buffer, from here on stale
	if err != nil {
		t.Fatal(err)
	}
	rememberIn(t, v, "decision", "project:shop", "s2", "use zstd for the parts")
	refresh(t, v, "s2")
	rememberIn(t, v, "decision", "project:shop", "s3", "keep parts under 256 KiB")
	refresh(t, v, "s3")

	saved := strings.Replace(string(buffer), "## Blockers\n", "## Blockers\n\n- the CI runner is down (a person's line)\n", 1)
	if saved == string(buffer) {
		t.Fatalf("no Blockers section to edit in:\n%s", buffer)
	}
	if err := os.WriteFile(p, []byte(saved), 0o600); err != nil {
		t.Fatal(err)
	}
	rememberIn(t, v, "decision", "project:shop", "s4", "index transcripts by session")
	rep := refresh(t, v, "s4")

	got := readHead(t, v, vault.MemoryHead)
	for _, want := range []string{"use WAL", "use zstd for the parts", "keep parts under 256 KiB", "index transcripts by session", "the CI runner is down (a person's line)"} {
		if !strings.Contains(got, want) {
			t.Errorf("MEMORY.md lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "<<<<<<<") {
		t.Errorf("MEMORY.md holds conflict markers:\n%s", got)
	}
	if s := status(rep, vault.MemoryHead); s != "merged" {
		t.Errorf("MEMORY.md's refresh status is %q, want merged", s)
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Rows {
		if r.Event.Kind == vault.KindHeadConflict {
			t.Errorf("spurious head.conflict: %s", r.Event.Data)
		}
	}
}
