package executor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/testvault"
)

// Delegations, then replay: clean, and the same state digest each time.
func TestAuditReplayClean(t *testing.T) {
	v := testvault.New(t)
	testvault.Remember(t, v, "a fact before")
	Delegate(context.Background(), v, []string{"one", "two"}, delegateOpts(fake("answer")))
	Delegate(context.Background(), v, []string{"three"}, delegateOpts(fake("crash")))
	Delegate(context.Background(), v, []string{"four"}, delegateOpts(fake("plain")))
	rep, err := Replay(v, ReplayRange{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Delegations != 3 || rep.Verified != 3 || len(rep.Differences) != 0 || rep.StateDigest == "" {
		t.Fatalf("%+v", rep)
	}
	again, err := Replay(v, ReplayRange{})
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
	rep, err := Replay(v, ReplayRange{})
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
	rep, err := Replay(v, ReplayRange{})
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
	rep, err := Replay(v, ReplayRange{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Redacted) != 1 || len(rep.Mismatches) != 0 {
		t.Fatalf("%+v", rep)
	}
}

// A range replays the results and the rows of its events alone: a forged
// result outside it is not its concern, inside it is caught; a range
// whose ends are swapped, or that names no event, is refused.
func TestAuditReplayRange(t *testing.T) {
	v := testvault.New(t)
	testvault.Remember(t, v, "a fact before")
	first := Delegate(context.Background(), v, []string{"one"}, delegateOpts(fake("answer")))[0].Event.ID
	_, sum, _ := Checksum([]byte(`{"summary":"the real answer"}`))
	forgedData, _ := json.Marshal(map[string]any{"task": "x", "executor": "fake", "result": map[string]string{"summary": "a forged answer"}, "checksum": sum})
	var forged string
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		forged = tx.Append(&vault.Event{Kind: KindDelegation, Text: "a forged answer", Data: forgedData}).ID
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seq := delegateOpts(fake("plain"))
	seq.Mode = ModeSequential // recorded in the order given
	later := Delegate(context.Background(), v, []string{"two", "three"}, seq)
	last := later[1].Event.ID

	if rep, err := Replay(v, ReplayRange{}); err != nil || rep.OK || len(rep.Mismatches) != 1 || rep.Range != nil {
		t.Fatalf("whole: %+v %v", rep, err)
	}
	after, err := Replay(v, ReplayRange{From: later[0].Event.ID})
	if err != nil || !after.OK || after.Delegations != 2 || after.Verified != 2 || after.Range == nil || after.Range.First != later[0].Event.ID {
		t.Fatalf("after the forgery: %+v %v", after, err)
	}
	for _, r := range []ReplayRange{{From: forged, To: forged}, {From: first, To: forged}, {To: forged}} {
		rep, err := Replay(v, r)
		if err != nil || rep.OK || len(rep.Mismatches) != 1 || rep.Mismatches[0].ID != forged {
			t.Fatalf("%+v: %+v %v", r, rep, err)
		}
	}
	if rep, err := Replay(v, ReplayRange{From: first, To: first}); err != nil || !rep.OK || rep.Range.Events != 1 || rep.Delegations != 1 {
		t.Fatalf("one event: %+v %v", rep, err)
	}
	if rep, err := Replay(v, ReplayRange{Since: time.Now().Add(time.Hour)}); err != nil || !rep.OK || rep.Range.Events != 0 || rep.Delegations != 0 {
		t.Fatalf("since later: %+v %v", rep, err)
	}
	if rep, err := Replay(v, ReplayRange{Since: time.Now().Add(-time.Hour)}); err != nil || rep.OK {
		t.Fatalf("since earlier (everything): %+v %v", rep, err)
	}
	if _, err := Replay(v, ReplayRange{From: last, To: first}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("swapped ends: %v", err)
	}
	if _, err := Replay(v, ReplayRange{From: "e_" + strings.Repeat("0", 26)}); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("no such event: %v", err)
	}
}
