package heads

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

// CurrentHeads gives what a refresh would leave in a head, without writing
// it: the file itself when it is current, else the render of the ledger
// merged with the person's edits.
func TestCurrentHeads(t *testing.T) {
	v := testvault.New(t)
	rememberIn(t, v, "decision", "project:shop", "s1", "use WAL")
	refresh(t, v, "s1")
	shop := vault.MustRel("threads/project/shop.md").String()
	files := func() []string { return []string{readHead(t, v, vault.MemoryHead), readHead(t, v, shop)} }

	got, err := CurrentHeads(v, vault.MemoryHead, shop)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files() {
		if string(got[i]) != f {
			t.Errorf("current head %d differs from its fresh file:\n%s", i, got[i])
		}
	}

	// A row the heads have not taken in yet, and a person's edit.
	rememberIn(t, v, "blocker", "project:shop", "s2", "the orders table is locked")
	p := v.Abs(vault.MustRel(vault.MemoryHead))
	data, _ := os.ReadFile(p)
	data = bytes.Replace(data, []byte("## Constraints\n"), []byte("## Constraints\n\n- a line a person wrote\n"), 1)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	before := files()
	tip := ledgerTip(t, v)
	got, err = CurrentHeads(v, vault.MemoryHead, shop)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"the orders table is locked", "the orders table is locked"} {
		if !strings.Contains(string(got[i]), want) {
			t.Errorf("current head %d lacks %q:\n%s", i, want, got[i])
		}
	}
	if !strings.Contains(string(got[0]), "a line a person wrote") {
		t.Errorf("the person's edit is lost:\n%s", got[0])
	}
	if !slices.Equal(files(), before) || ledgerTip(t, v) != tip {
		t.Error("CurrentHeads wrote a head or the ledger")
	}

	if got, err := CurrentHeads(v, "threads/topic/none.md"); err != nil || got[0] != nil {
		t.Errorf("a head never rendered: %q, %v; want nil, nil", got, err)
	}
	if _, err := CurrentHeads(v, vault.ContinuityHead); !errors.Is(err, vault.ErrInvalid) {
		t.Errorf("CONTINUITY.md: err = %v, want ErrInvalid", err)
	}
}

func ledgerTip(t *testing.T, v *vault.Vault) string {
	t.Helper()
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	return st.Rows[len(st.Rows)-1].ID
}
