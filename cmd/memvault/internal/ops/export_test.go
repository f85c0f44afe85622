package ops

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// exportOf records a small thread in a new vault and exports it.
func exportOf(t *testing.T) (*vault.Vault, *Export) {
	t.Helper()
	v := testvault.New(t)
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		d, err := memory.Remember(tx, memory.Input{Kind: "decision", Thread: "project:shop", Text: "use WAL"})
		if err != nil {
			return err
		}
		_, err = memory.Remember(tx, memory.Input{Kind: "fact", Thread: "project:shop", Text: "WAL needs fsync", Links: []string{d.ID}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := BuildExport(v, ExportQuery{Thread: "project:shop"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Events) != 2 {
		t.Fatalf("exported %d events, want 2", len(ex.Events))
	}
	return v, ex
}

// TestImportRefusesAResealedForgery: an event's text changed and the
// manifest computed again over the change, so every SHA-256 of the
// export agrees; the ledger's own hash of the line still refuses it.
func TestImportRefusesAResealedForgery(t *testing.T) {
	t.Parallel()
	_, ex := exportOf(t)
	forged := strings.Replace(ex.Events[0], `"use WAL"`, `"use MMAP"`, 1)
	if forged == ex.Events[0] {
		t.Fatal("the forgery changed nothing")
	}
	ex.Events[0] = forged
	ex.Seal()
	data, _ := json.Marshal(ex)
	_, err := ParseExport("forged.json", data)
	if !errors.Is(err, vault.ErrCorrupt) || !strings.Contains(err.Error(), "events/1") || !strings.Contains(err.Error(), "hash mismatch") {
		t.Fatalf("a resealed forgery: %v; want a corrupt-export error naming events/1's hash", err)
	}
	// Untouched, the same export parses.
	_, clean := exportOf(t)
	data, _ = json.Marshal(clean)
	if _, err := ParseExport("clean.json", data); err != nil {
		t.Fatalf("a clean export: %v", err)
	}
}

// TestImportRefusesAPolicy: an export whose events hold a policy event,
// sealed as the source's ledger sealed it and the manifest computed again,
// is refused before anything is written: importing someone's export must
// not change who may write this vault.
func TestImportRefusesAPolicy(t *testing.T) {
	t.Parallel()
	src, ex := exportOf(t)
	if _, err := src.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := tx.SetPolicy(map[string][]string{"constraint": {"control", "mcp"}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	segs, _, err := vault.ListSegments(src.Root)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src.SegPath(segs[len(segs)-1]))
	if err != nil {
		t.Fatal(err)
	}
	var policyLine string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.Contains(l, `"kind":"policy"`) {
			policyLine = l
		}
	}
	if policyLine == "" {
		t.Fatal("no policy line in the source's ledger")
	}
	ex.Events = append(ex.Events, policyLine)
	ex.Seal()
	raw, _ := json.Marshal(ex)
	_, err = ParseExport("policy.json", raw)
	if !errors.Is(err, vault.ErrInvalid) || !strings.Contains(err.Error(), "kind policy is not imported") {
		t.Fatalf("an export carrying a policy event: %v; want it refused", err)
	}
	if again, err := BuildExport(src, ExportQuery{Thread: "project:shop"}); err != nil {
		t.Fatal(err)
	} else {
		for _, l := range again.Events {
			if strings.Contains(l, `"kind":"policy"`) {
				t.Fatalf("an export carries the vault's policy: %s", l)
			}
		}
	}
}

// TestImportConflictWritesNothing: the target holds an event with the id
// of the export's last event and other content. The import's earlier
// events were queued by then; the conflict must undo them: the files and
// HEAD as they were.
func TestImportConflictWritesNothing(t *testing.T) {
	t.Parallel()
	_, ex := exportOf(t)
	last, _, err := vault.ParseLine([]byte(ex.Events[len(ex.Events)-1]))
	if err != nil {
		t.Fatal(err)
	}
	target := testvault.New(t)
	if _, err := target.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		tx.Append(&vault.Event{ID: last.ID, Kind: "fact", Text: "something else", Source: "cli"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before := vaulttest.Files(t, target.Root)
	data, _ := json.Marshal(ex)
	parsed, err := ParseExport("shop.json", data)
	if err != nil {
		t.Fatal(err)
	}
	_, err = target.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := Import(tx, parsed)
		return err
	})
	if !errors.Is(err, vault.ErrConflict) {
		t.Fatalf("import over a different event of the same id: %v; want a conflict", err)
	}
	if after := vaulttest.Files(t, target.Root); !maps.EqualFunc(before, after, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Error("a refused import changed the vault's files")
	}
	testvault.MustVerify(t, target)

	// The same export into an empty vault: both events, their ids kept,
	// a link between them intact, and the chain verifies.
	empty := testvault.New(t)
	var res *ImportResult
	if _, err := empty.Update(vault.TxOptions{}, func(tx *vault.Tx) (err error) {
		res, err = Import(tx, parsed)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	testvault.MustVerify(t, empty)
	st, err := empty.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 2 || st.Get(last.ID) == nil || st.Get(last.ID).Text != "WAL needs fsync" {
		t.Errorf("imported %+v; the last event is %+v", res, st.Get(last.ID))
	}
}
