package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/memvault/memvault/vault/vaulttest"
)

// memvaultCmd runs racingMemvault (binary_test.go) with a private HOME.
func memvaultCmd(t *testing.T, home string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(racingMemvault(t), args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "MEMVAULT_LOCK_TIMEOUT=300s", "MEMVAULT_AGENT=", "MEMVAULT_DIR=")
	return cmd
}

// TestConcurrentWriters runs 8 processes that each record events at the
// same time (12 each; MEMVAULT_WRITER_EVENTS sets how many, 50 or more for a
// long run): every event must land exactly once, each in its own commit,
// with the chain intact and git's own checker satisfied.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	const procs = 8
	each := tortureSize(t, "MEMVAULT_WRITER_EVENTS", 6, 12)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	vaultDir := filepath.Join(dir, "vault")
	if out, err := memvaultCmd(t, home, "--vault", vaultDir, "init").CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}

	var wg sync.WaitGroup
	errs := make(chan error, procs)
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				cmd := memvaultCmd(t, home, "--vault", vaultDir, "--agent", fmt.Sprintf("writer-%d", p),
					"remember", fmt.Sprintf("event %d from writer %d", i, p))
				if out, err := cmd.CombinedOutput(); err != nil {
					errs <- fmt.Errorf("writer %d, event %d: %v\n%s", p, i, err, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	out, err := memvaultCmd(t, home, "--vault", vaultDir, "ledger", "--kind", "fact", "--json").Output() // init's policy event aside
	if err != nil {
		t.Fatalf("ledger: %v", err)
	}
	var rows []struct{ Text, Agent string }
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != procs*each {
		t.Fatalf("ledger has %d events, want %d", len(rows), procs*each)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.Text] {
			t.Errorf("event %q recorded twice", r.Text)
		}
		seen[r.Text] = true
	}
	for p := range procs {
		for i := range each {
			if want := fmt.Sprintf("event %d from writer %d", i, p); !seen[want] {
				t.Errorf("lost %q", want)
			}
		}
	}

	if out, err := memvaultCmd(t, home, "--vault", vaultDir, "verify").CombinedOutput(); err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	out, err = memvaultCmd(t, home, "--vault", vaultDir, "log", "--limit", "0", "--json").Output()
	if err != nil {
		t.Fatalf("log: %v", err)
	}
	var commits []struct {
		Trailers map[string][]string
	}
	if err := json.Unmarshal(out, &commits); err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, c := range commits {
		events += len(c.Trailers["Memvault-Event"])
	}
	// init's commit carries its policy event.
	if len(commits) != procs*each+1 || events != procs*each+1 {
		t.Fatalf("history has %d commits carrying %d events, want %d commits (init + one per event) and %d events",
			len(commits), events, procs*each+1, procs*each+1)
	}

	if !vaulttest.HasGit() {
		t.Log("git not installed: skipping git fsck and git status")
		return
	}
	git := vaulttest.Git{Dir: vaultDir, Env: vaulttest.Sandbox(home)}
	git.Run(t, "fsck", "--strict")
	if n := strings.TrimSpace(git.Run(t, "rev-list", "--count", "HEAD")); n != fmt.Sprint(procs*each+1) {
		t.Fatalf("git rev-list counts %s commits", n)
	}
	if st := git.Run(t, "status", "--porcelain"); st != "" {
		t.Fatalf("git status is not clean:\n%s", st)
	}
}
