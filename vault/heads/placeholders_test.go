package heads

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

// emptySectionRE finds an empty section as renders write it now: the
// heading alone, then the next heading or the end.
var emptySectionRE = regexp.MustCompile(`(?m)^(## [^\n]+\n)(\n## |\z)`)

// withPlaceholders is a render as versions before issue 34 wrote it: "-
// none" under every empty section.
func withPlaceholders(s string) string {
	for {
		t := emptySectionRE.ReplaceAllString(s, "$1\n- none\n$2")
		if t == s {
			return s
		}
		s = t
	}
}

// A vault rendered by an earlier version (its last render, the base of the
// next merge, says "- none" under each empty section) where a person wrote
// into empty sections in each way people do: replacing the placeholder,
// writing under it, or leaving it. The first refresh of this version drops
// the placeholders, keeps every line the person wrote, puts the new rows
// beside them, and records no conflict.
func TestOldPlaceholdersMergeWithoutConflict(t *testing.T) {
	v := testvault.New(t)
	rememberIn(t, v, "decision", "project:shop", "s1", "use WAL")
	refresh(t, v, "s1")
	now := readHead(t, v, vault.MemoryHead)
	if strings.Contains(now, "- none") {
		t.Fatalf("an empty section still says - none:\n%s", now)
	}
	old := withPlaceholders(now)
	if strings.Count(old, "- none") < 4 {
		t.Fatalf("the old-style render has too few placeholders:\n%s", old)
	}
	// The last render, as the earlier version committed it.
	if err := os.WriteFile(v.Abs(vault.MustRel(".rendered/"+vault.MemoryHead)), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	mine := strings.Replace(old, "## Blockers\n\n- none\n", "## Blockers\n\n- the CI runner is down (replaced the placeholder)\n", 1)
	mine = strings.Replace(mine, "## Next actions\n\n- none\n", "## Next actions\n\n- none\n- ask Bob about the keys (under the placeholder)\n", 1)
	mine = strings.Replace(mine, "## Constraints\n\n- none\n", "## Constraints\n\n- none\n- never deploy on Fridays (written in place)\n", 1)
	if err := os.WriteFile(v.Abs(vault.MustRel(vault.MemoryHead)), []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	rememberIn(t, v, "blocker", "project:shop", "s2", "the orders table is locked")
	rememberIn(t, v, "next", "project:shop", "s2", "write the migration")
	rep := refresh(t, v, "s2")

	got := readHead(t, v, vault.MemoryHead)
	for _, want := range []string{"the CI runner is down", "ask Bob about the keys", "never deploy on Fridays",
		"the orders table is locked", "write the migration", "use WAL"} {
		if !strings.Contains(got, want) {
			t.Errorf("MEMORY.md lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "- none") || strings.Contains(got, "<<<<<<<") {
		t.Errorf("MEMORY.md keeps a placeholder or conflict markers:\n%s", got)
	}
	if s := status(rep, vault.MemoryHead); s != "merged" {
		t.Errorf("MEMORY.md's refresh status is %q, want merged:\n%s", s, got)
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Rows {
		if r.Event.Kind == vault.KindHeadConflict {
			t.Errorf("head.conflict: %s", r.Event.Data)
		}
	}
	// The rows are put first, the person's line after (KeepInsertions).
	if i, j := strings.Index(got, "the orders table is locked"), strings.Index(got, "the CI runner is down"); i > j {
		t.Errorf("the new blocker is not above the person's line:\n%s", got)
	}
}

// A section that empties and fills again between renders keeps a line a
// person wrote into it when it was empty, and a line written under rows
// stays when the rows go: no conflict either way.
func TestEmptySectionComesAndGoes(t *testing.T) {
	v := testvault.New(t)
	refresh(t, v, "s0")
	addUnder(t, v, vault.MemoryHead, "## Blockers", "- a person's note on blockers")
	rememberIn(t, v, "blocker", "", "s1", "waiting for the keys")
	refresh(t, v, "s1")
	got := readHead(t, v, vault.MemoryHead)
	if !strings.Contains(got, "a person's note on blockers") || !strings.Contains(got, "waiting for the keys") {
		t.Fatalf("lost a line:\n%s", got)
	}
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	var blocker string
	for _, r := range st.Rows {
		if r.Kind == "blocker" {
			blocker = r.ID
		}
	}
	if _, err := v.Update(vault.TxOptions{Session: "s2"}, func(tx *vault.Tx) error {
		tx.Append(&vault.Event{Kind: vault.KindDone, Text: "keys arrived", Links: []string{blocker}})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rep := refresh(t, v, "s2")
	got = readHead(t, v, vault.MemoryHead)
	if !strings.Contains(got, "a person's note on blockers") || strings.Contains(got, "waiting for the keys") {
		t.Fatalf("after the blocker closed:\n%s", got)
	}
	if s := status(rep, vault.MemoryHead); s != "merged" {
		t.Errorf("status %q, want merged", s)
	}
}
