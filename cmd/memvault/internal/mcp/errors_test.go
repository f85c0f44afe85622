package mcp

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
)

// TestBusyVault holds the vault lock as another writer would and checks
// that every write answers at once with a retryable busy error, writes
// nothing, and succeeds once the lock is free; reads go on meanwhile.
func TestBusyVault(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{LockWait: 20 * time.Millisecond}, "")
	var w writeOut
	f.ok("commitment_open", map[string]any{"text": "answer the review"}, &w)
	release, err := f.v.Lock(vault.Lease{Agent: "other", Command: "memvault gc"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := readVault(t, f)
	writes := map[string]map[string]any{
		"remember":         {"text": "a fact"},
		"commitment_open":  {"text": "a promise"},
		"commitment_close": {"id": w.Event.ID},
		"decide":           {"decision": "d", "rationale": "r"},
		"learn":            {"error": "e", "prevention": "p"},
		"next":             {"text": "n"},
		"done":             {"text": "something"},
	}
	for tool, args := range writes {
		te, msg := f.fails(tool, args)
		if te.Class != "busy" || te.Code != 5 || !te.Retryable || !strings.Contains(msg, "held by") ||
			!strings.Contains(msg, "memvault gc") || !strings.Contains(msg, "retryable: yes") {
			t.Errorf("%s while busy: %+v %q", tool, te, msg)
		}
	}
	// Reading takes no lock.
	var st ops.Status
	f.ok("status", nil, &st)
	if st.Lock == nil || st.Lock.Command != "memvault gc" || st.Events != 1 {
		t.Errorf("status while busy: lock %+v, events %d", st.Lock, st.Events)
	}
	var rec recallOut
	f.ok("recall", map[string]any{"query": "review"}, &rec)
	if len(rec.Hits) == 0 {
		t.Errorf("recall while busy found nothing")
	}
	after := readVault(t, f)
	if !bytes.Equal(before, after) {
		t.Errorf("a refused write changed the vault")
	}
	release()
	f.ok("remember", map[string]any{"text": "a fact"}, &w)
	if w.Event == nil || w.Commit == "" {
		t.Errorf("the retry after the lock came free: %+v", w)
	}
}

// readVault is the vault's ledger and git's branch, what a write changes.
func readVault(t *testing.T, f *fixture) []byte {
	t.Helper()
	var b bytes.Buffer
	err := filepath.WalkDir(filepath.Join(f.v.Root, "ledger"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		b.WriteString(p + "\n")
		b.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile(filepath.Join(f.v.Root, ".git", "refs", "heads", "main"))
	if err != nil {
		t.Fatal(err)
	}
	b.Write(ref)
	return b.Bytes()
}

// TestVaultNeedsRepair corrupts a committed ledger line, as a bad hand
// edit or a naive merge would: every write is refused with the fix named,
// and the reading tools still answer.
func TestVaultNeedsRepair(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{}, "")
	var w writeOut
	f.ok("remember", map[string]any{"text": "the queue holds five workers", "thread": "project:shop"}, &w)
	f.ok("remember", map[string]any{"text": "the cache is redis", "thread": "project:shop"}, &w)
	rows := f.state().Rows
	seg := filepath.Join(f.v.Root, filepath.FromSlash(rows[0].File))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Replace(data, []byte("five workers"), []byte("nine workers"), 1)
	if bytes.Equal(tampered, data) {
		t.Fatal("nothing to tamper with")
	}
	if err := os.WriteFile(seg, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	before := readVault(t, f)
	for tool, args := range map[string]map[string]any{
		"remember":        {"text": "a fact"},
		"commitment_open": {"text": "a promise"},
		"decide":          {"decision": "d", "rationale": "r"},
		"next":            {"text": "n"},
	} {
		te, msg := f.fails(tool, args)
		if te.Class != "corrupt" || te.Code != 6 || te.Retryable || !strings.Contains(te.Hint, "memvault repair") {
			t.Errorf("%s on a vault that needs repair: %+v %q", tool, te, msg)
		}
	}
	if !bytes.Equal(before, readVault(t, f)) {
		t.Errorf("a refused write changed the vault")
	}
	var st ops.Status
	f.ok("status", nil, &st)
	if st.Health.OK || !strings.Contains(st.Health.Fix, "memvault repair") || len(st.Health.Problems) == 0 {
		t.Errorf("status health %+v", st.Health)
	}
	var rec recallOut
	f.ok("recall", map[string]any{"query": "redis cache", "thread": "project:shop"}, &rec)
	if len(rec.Hits) == 0 {
		t.Errorf("recall on a vault that needs repair found nothing")
	}
	var lg ledgerOut
	f.ok("ledger", nil, &lg)
	if len(lg.Rows) != 2 {
		t.Errorf("ledger on a vault that needs repair: %d rows", len(lg.Rows))
	}
	var ctx contextOut
	f.ok("context", map[string]any{"thread": "project:shop"}, &ctx)
	if !strings.Contains(ctx.Context, "repair") {
		t.Errorf("the context does not warn of the repair:\n%s", ctx.Context)
	}
}

// TestNoVault: a server pointed at a folder with no vault answers every
// call with not_found and what to do, and creates nothing.
func TestNoVault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := setup(t, Options{Vault: filepath.Join(dir, ".memory")}, "")
	for _, tool := range []string{"recall", "remember", "status", "context"} {
		args := map[string]any{"query": "x"}
		if tool == "remember" {
			args = map[string]any{"text": "x"}
		} else if tool != "recall" {
			args = nil
		}
		te, msg := f.fails(tool, args)
		if te.Class != "not_found" || te.Code != 3 || !strings.Contains(te.Hint, "init") {
			t.Errorf("%s without a vault: %+v %q", tool, te, msg)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a call without a vault created %v", entries)
	}
	// The server found the vault by itself when it is created meanwhile:
	// it opens it per call.
	if _, _, err := vault.Init(filepath.Join(dir, ".memory")); err != nil {
		t.Fatal(err)
	}
	var st ops.Status
	f.ok("status", nil, &st)
	if !st.Health.OK || st.Events != 0 {
		t.Errorf("status of the new vault: %+v", st)
	}
}
