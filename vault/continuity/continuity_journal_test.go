package continuity

import (
	"testing"

	"github.com/memvault/memvault/vault/heads"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

// A CONTINUITY.md command killed after writing the file: the next command
// finds no hand edit to commit and renders cleanly.
func TestKilledContinuityWriteIsUndone(t *testing.T) {
	for _, step := range []string{"staged", "sealed"} {
		t.Run(step, func(t *testing.T) {
			v := testvault.New(t)
			next := func(v *vault.Vault, text string) {
				t.Helper()
				if _, err := UpdateContinuity(v, ContinuityOptions{}, func(ct *ContinuityTx) error {
					return ct.Next(text, false)
				}); err != nil {
					t.Fatal(err)
				}
			}
			next(v, "the first step")
			testvault.KillAt(t, v, step, func() { next(v, "a step the kill interrupts") })
			v2, err := vault.Open(v.Root)
			if err != nil {
				t.Fatal(err)
			}
			next(v2, "a step after the kill")
			if n := testvault.Kinds(t, v2); n[vault.KindHeadEdited] != 0 || n[vault.KindHeadConflict] != 0 {
				t.Fatalf("head.edited %d, head.conflict %d: both spurious", n[vault.KindHeadEdited], n[vault.KindHeadConflict])
			}
			cleanAfterKill(t, v2, vault.ContinuityHead, ".rendered/CONTINUITY.md")
		})
	}
}

// cleanAfterKill fails the test when a path differs from HEAD.
func cleanAfterKill(t *testing.T, v *vault.Vault, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if dirty, err := heads.Uncommitted(v, vault.MustRel(p)); err != nil || dirty {
			t.Errorf("%s differs from HEAD (%v)", p, err)
		}
	}
}
