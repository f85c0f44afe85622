package executor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

// Delegations, then replay: clean, and the same state digest each time.
func TestAuditReplayClean(t *testing.T) {
	v := testvault.New(t)
	testvault.Remember(t, v, "a fact before")
	Delegate(context.Background(), v, []string{"one", "two"}, delegateOpts(fake("answer")))
	Delegate(context.Background(), v, []string{"three"}, delegateOpts(fake("crash")))
	Delegate(context.Background(), v, []string{"four"}, delegateOpts(fake("plain")))
	rep, err := Replay(v)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Delegations != 3 || rep.Verified != 3 || len(rep.Differences) != 0 || rep.StateDigest == "" {
		t.Fatalf("%+v", rep)
	}
	again, err := Replay(v)
	if err != nil {
		t.Fatal(err)
	}
	if again.StateDigest != rep.StateDigest {
		t.Fatal("the same ledger folded to two states")
	}
	rows, err := Audit(v, AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[2].Kind != KindDelegationFailed || rows[2].Code != CodeCrash || len(rows[2].Attempts) != 3 {
		t.Fatalf("audit %+v", rows)
	}
	if rows, _ := Audit(v, AuditQuery{Executor: "fake-plain"}); len(rows) != 1 || rows[0].ChecksumBy != "memvault" {
		t.Fatalf("audit --executor: %+v", rows)
	}
	if rows, _ := Audit(v, AuditQuery{Limit: 1}); len(rows) != 1 || rows[0].Task != "four" {
		t.Fatalf("audit --limit: %+v", rows)
	}
}

// A result event whose chain is intact but whose result does not hash to
// its checksum (written by anything but the runner) is caught.
func TestAuditReplayCatchesAForgedResult(t *testing.T) {
	v := testvault.New(t)
	Delegate(context.Background(), v, []string{"one"}, delegateOpts(fake("answer")))
	_, sum, _ := Checksum([]byte(`{"summary":"the real answer"}`))
	forged, _ := json.Marshal(map[string]any{"task": "x", "executor": "fake", "result": map[string]string{"summary": "a forged answer"}, "checksum": sum})
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		tx.Append(&vault.Event{Kind: KindDelegation, Text: "a forged answer", Data: forged})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rep, err := Replay(v)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || len(rep.Mismatches) != 1 || !strings.Contains(rep.Mismatches[0].Reason, "hashes to") || rep.Verified != 1 {
		t.Fatalf("%+v", rep)
	}
}

// A result edited in the ledger file is caught by the chain.
func TestAuditReplayCatchesAnEditedLine(t *testing.T) {
	v := testvault.New(t)
	Delegate(context.Background(), v, []string{"one"}, delegateOpts(fake("answer")))
	var seg string
	filepath.WalkDir(filepath.Join(v.Root, "ledger"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			seg = p
		}
		return nil
	})
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "done: one", "done: two", -1)
	if edited == string(data) {
		t.Fatal("nothing to edit")
	}
	if err := os.WriteFile(seg, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := Replay(v)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || len(rep.Problems) == 0 {
		t.Fatalf("an edited line passed: %+v", rep)
	}
}

// A result that held a secret is redacted in the ledger: replay says so
// rather than calling it a mismatch.
func TestAuditReplayRedactedResult(t *testing.T) {
	v := testvault.New(t)
	t.Setenv("FAKE_NOTE", "ghp_"+strings.Repeat("a1B2", 9))
	e := fake("env")
	e.Env = []string{"FAKE_NOTE"}
	out := Delegate(context.Background(), v, []string{"x"}, delegateOpts(e))
	if out[0].Err != nil {
		t.Fatal(out[0].Err)
	}
	if strings.Contains(string(out[0].Event.Data), "ghp_") {
		t.Fatalf("the secret reached the ledger: %s", out[0].Event.Data)
	}
	rep, err := Replay(v)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Redacted) != 1 || len(rep.Mismatches) != 0 {
		t.Fatalf("%+v", rep)
	}
}
