package hooks

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/vaulttest"
)

// healthVault makes a vault with one fact, as a hook finds it.
func healthVault(t *testing.T) *vault.Vault {
	t.Helper()
	v, _, err := vault.Init(filepath.Join(t.TempDir(), vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := memory.Remember(tx, memory.Input{Text: "the first fact"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// forge changes a letter of the ledger's first line by hand and returns a
// function that puts it back.
func forge(t *testing.T, v *vault.Vault) (repair func()) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(v.Root, "ledger", "*", "*", "*.jsonl"))
	if len(segs) == 0 {
		t.Fatal("no ledger segment")
	}
	good, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	// the same size, a new mtime: the writers' check reads it again
	vaulttest.EditFile(t, segs[0], bytes.Replace(good, []byte("the first fact"), []byte("the first fakt"), 1))
	return func() { vaulttest.EditFile(t, segs[0], good) }
}

// breakConfig makes memvault.toml unparsable and returns the vault as a
// hook opens it.
func breakConfig(t *testing.T, v *vault.Vault) *vault.Vault {
	t.Helper()
	if err := os.WriteFile(filepath.Join(v.Root, "memvault.toml"), []byte("[heads\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cv, err := vault.OpenForCapture(v.Root)
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

// runHook runs one hook event the way `memvault hook` does: a fresh runner
// per process.
func runHook(t *testing.T, v *vault.Vault, harness string, ev Event, p Payload) string {
	t.Helper()
	r := &Runner{V: v, Harness: mustHarness(t, harness), Agent: "default", Start: time.Now()}
	out, err := r.Run(ev, p)
	if err != nil {
		t.Fatalf("%s %s: %v", harness, ev, err)
	}
	return out
}

func refusals(t *testing.T, v *vault.Vault) int {
	data, _ := os.ReadFile(filepath.Join(v.Root, ".logs", "hooks.log"))
	return strings.Count(string(data), "structured writes refused, transcript lines still captured")
}

func kinds(t *testing.T, v *vault.Vault) map[string]int {
	t.Helper()
	st, err := v.LoadState()
	if err != nil {
		t.Fatal(err)
	}
	return st.KindCounts()
}

func transcriptText(t *testing.T, v *vault.Vault, session string) string {
	t.Helper()
	var b strings.Builder
	if err := transcript.Read(v.Files(), transcript.Ref{Agent: "default", Session: session}, 1, 0, func(m transcript.Stored) error {
		b.WriteString(m.Text + "\n")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A stop whose control lines would record an event, on a forged ledger:
// the vault refuses the event, so the hook stores and commits the turn's
// lines alone, logs once, and the line becomes an event after the repair.
func TestStopOnAForgedLedgerCommitsTheTranscript(t *testing.T) {
	v := healthVault(t)
	repair := forge(t, v)
	before, _ := v.Head()
	p := Payload{SessionID: "s1", LastAssistant: "Done.\nDECISION: use WAL for the index"}
	runHook(t, v, "openclaw", PromptSubmit, Payload{SessionID: "s1", Prompt: "which journal mode?"})
	runHook(t, v, "openclaw", Stop, p)
	if got := transcriptText(t, v, "s1"); !strings.Contains(got, "which journal mode?") || !strings.Contains(got, "DECISION: use WAL") {
		t.Fatalf("transcript after a refused stop: %q", got)
	}
	if after, _ := v.Head(); after == before {
		t.Fatal("the turn's lines were not committed")
	}
	if k := kinds(t, v); k["decision"] != 0 {
		t.Fatalf("an event was written on a forged ledger: %v", k)
	}
	if n := refusals(t, v); n != 1 {
		t.Fatalf("%d refusals logged by one hook, want 1", n)
	}

	repair()
	runHook(t, v, "openclaw", Stop, Payload{SessionID: "s1", LastAssistant: "Nothing new."})
	if k := kinds(t, v); k["decision"] != 1 {
		t.Fatalf("after the repair the waiting DECISION: line was not recorded: %v", k)
	}
	if n := refusals(t, v); n != 1 {
		t.Fatalf("a healthy vault logged a refusal (%d in all)", n)
	}
}

// A compaction on a vault whose memvault.toml does not parse: the lines
// are committed, no node is made, and the refresh waits in the queue.
func TestCompactionWithABrokenConfig(t *testing.T) {
	v := breakConfig(t, healthVault(t))
	before, _ := v.Head()
	runHook(t, v, "opencode", CompactionComplete, Payload{SessionID: "s1", LastAssistant: "compacting now"})
	if got := transcriptText(t, v, "s1"); !strings.Contains(got, "compacting now") {
		t.Fatalf("transcript: %q", got)
	}
	if after, _ := v.Head(); after == before {
		t.Fatal("the compaction's lines were not committed")
	}
	if k := kinds(t, v); k["node.created"] != 0 {
		t.Fatalf("a node was recorded with a broken config: %v", k)
	}
	jobs, err := hookstate.PendingJobs(v)
	if err != nil || len(jobs) != 1 || jobs[0].Kind != "refresh" {
		t.Fatalf("queued jobs: %+v %v", jobs, err)
	}
}

// Jobs a vault in need of repair refuses stay queued, and run after it.
func TestRefusedJobsWaitForTheRepair(t *testing.T) {
	v := healthVault(t)
	runHook(t, v, "openclaw", PromptSubmit, Payload{SessionID: "s1", Prompt: "summarise me later"})
	repair := forge(t, v)
	runHook(t, v, "openclaw", SessionEnd, Payload{SessionID: "s1", LastAssistant: "bye"})
	jobs, err := hookstate.PendingJobs(v)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("queued jobs on a forged ledger: %+v %v", jobs, err)
	}
	runHook(t, v, "openclaw", Stop, Payload{SessionID: "s2", LastAssistant: "another session"})
	if jobs, _ := hookstate.PendingJobs(v); len(jobs) != 3 {
		t.Fatalf("a refused job left the queue: %+v", jobs)
	}
	repair()
	for range 3 { // a loaded machine may spend a hook's job budget early
		runHook(t, v, "openclaw", Stop, Payload{SessionID: "s2", LastAssistant: "and again"})
		if jobs, _ := hookstate.PendingJobs(v); len(jobs) == 0 {
			break
		}
	}
	if jobs, _ := hookstate.PendingJobs(v); len(jobs) != 0 {
		t.Fatalf("jobs left after the repair: %+v", jobs)
	}
	if k := kinds(t, v); k["node.created"] != 1 {
		t.Fatalf("the session's summary was not made after the repair: %v", k)
	}
}

// Session start says it first, on a forged ledger and on a broken config,
// and says nothing on a healthy vault.
func TestSessionStartWarns(t *testing.T) {
	v := healthVault(t)
	if got := runHook(t, v, "codex", SessionStart, Payload{SessionID: "s1"}); strings.Contains(got, "WARNING") {
		t.Fatalf("a healthy vault warns: %q", got)
	}
	repair := forge(t, v)
	got := runHook(t, v, "codex", SessionStart, Payload{SessionID: "s1"})
	if !strings.HasPrefix(got, "memvault: WARNING: the ledger needs repair") || !strings.Contains(got, "memvault repair") {
		t.Fatalf("start context on a forged ledger: %q", got)
	}
	repair()
	got = runHook(t, breakConfig(t, v), "codex", SessionStart, Payload{SessionID: "s1"})
	if !strings.HasPrefix(got, "memvault: WARNING: memvault.toml does not parse") {
		t.Fatalf("start context with a broken config: %q", got)
	}
	if !strings.Contains(got, UsageNote[:40]) {
		t.Fatalf("the warning pushed the usage note out: %q", got)
	}
}

// Only the vault's health counts as a refusal: a busy vault, or a corrupt
// one while the chain is intact, is another failure.
func TestRefusedIsOnlyForHealth(t *testing.T) {
	corrupt := fault.New(vault.ErrCorrupt, "ledger: something")
	invalid := fault.New(vault.ErrInvalid, "memvault.toml: something")
	busy := fault.New(vault.ErrBusy, "vault busy")
	v := healthVault(t)
	r := &Runner{V: v, Harness: mustHarness(t, "codex"), Agent: "default"}
	if r.refused(corrupt) || r.refused(invalid) || r.refused(busy) || r.refused(nil) {
		t.Fatal("a healthy vault's error taken for a refusal")
	}
	repair := forge(t, v)
	r = &Runner{V: v, Harness: mustHarness(t, "codex"), Agent: "default"}
	if !r.refused(corrupt) || r.refused(invalid) || r.refused(busy) || r.refused(errors.New("x")) {
		t.Fatal("on a forged ledger only ErrCorrupt is a refusal")
	}
	repair()
	r = &Runner{V: breakConfig(t, v), Harness: mustHarness(t, "codex"), Agent: "default"}
	if !r.refused(invalid) || r.refused(busy) {
		t.Fatal("with a broken config ErrInvalid is a refusal, ErrBusy is not")
	}
}

// TestSessionStartChecksHealthOnce: a session start on a healthy vault
// asks vault.Health not at all (its transaction checks the chain and the
// configuration, and succeeds), and its context carries no warning; on a
// forged ledger or a broken memvault.toml it asks once and warns first.
// Not parallel: it counts through the package's vaultHealth.
func TestSessionStartChecksHealthOnce(t *testing.T) {
	calls := 0
	defer func(f func(*vault.Vault) (vault.Health, error)) { vaultHealth = f }(vaultHealth)
	inner := vaultHealth
	vaultHealth = func(v *vault.Vault) (vault.Health, error) { calls++; return inner(v) }
	v := healthVault(t)
	got := runHook(t, v, "claude-code", SessionStart, Payload{SessionID: "s1", Source: "startup"})
	if calls != 0 || strings.Contains(got, "WARNING") || !strings.Contains(got, "the first fact") {
		t.Fatalf("healthy vault: %d health checks, want 0; context:\n%s", calls, got)
	}
	repair := forge(t, v)
	calls = 0
	got = runHook(t, v, "claude-code", SessionStart, Payload{SessionID: "s2", Source: "startup"})
	if calls != 1 || !strings.HasPrefix(got, "memvault: WARNING: ") {
		t.Fatalf("forged ledger: %d health checks, want 1; context:\n%s", calls, got)
	}
	repair()
	calls = 0
	got = runHook(t, breakConfig(t, v), "claude-code", SessionStart, Payload{SessionID: "s3", Source: "startup"})
	if calls != 1 || !strings.HasPrefix(got, "memvault: WARNING: ") {
		t.Fatalf("broken memvault.toml: %d health checks, want 1; context:\n%s", calls, got)
	}
}
