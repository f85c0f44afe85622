package main

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGCKillLoop (issue 33, item 4): memvault gc killed with its process
// group at random moments (git gc or the in-process pack, whichever the
// round draws), each kill followed by a write that must succeed: a lock
// file the killed gc left never blocks it (gitrepo's gcrun.go clears
// what the run left). At the end nothing is lost (every fact written is in
// the ledger), no lock file is left under .git, and verify, git fsck, a
// memvault gc and a git gc all pass. 30 rounds; MEMVAULT_GCKILL_ROUNDS
// runs more (issue 33 reproduced the lock left behind in 6 to 56).
func TestGCKillLoop(t *testing.T) {
	if !hasGit() {
		t.Skip("git not installed")
	}
	rounds := tortureSize(t, "MEMVAULT_GCKILL_ROUNDS", 30, 30)
	rng := rand.New(rand.NewPCG(tortureSeed(t), 33))
	r := newRig(t, plainMemvault(t))
	r.lockTimeout = "10s"
	var facts []string
	for i := range 20 {
		fact := "seed fact " + string(rune('a'+i))
		r.run("remember", "--global", "fact", fact)
		facts = append(facts, fact)
	}
	killed := 0
	for i := range rounds {
		engine := []string{"git", "go-git"}[rng.IntN(2)]
		delay := time.Duration(rng.IntN(100)) * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		cmd := r.cmd(ctx, "gc", "--engine", engine)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(delay, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		err := cmd.Wait()
		timer.Stop()
		cancel()
		if err != nil {
			killed++
		}
		fact := "after kill " + strings.Repeat("x", i%3) + string(rune('A'+i%26)) + " round " + strconv.Itoa(i)
		r.run("remember", "--global", "fact", fact)
		facts = append(facts, fact)
	}
	t.Logf("%d of %d gc runs killed", killed, rounds)
	ledger := r.run("ledger", "--json", "--limit", "0")
	for _, f := range facts {
		if !strings.Contains(ledger, f) {
			t.Errorf("lost: %q", f)
		}
	}
	var locks []string
	filepath.WalkDir(filepath.Join(r.vault, ".git"), func(p string, e os.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(p, ".lock") || filepath.Base(p) == "packed-refs.new") {
			locks = append(locks, p)
		}
		return nil
	})
	if len(locks) > 0 {
		t.Errorf("lock files left after the writes: %v", locks)
	}
	r.checkRepo()
	r.run("gc")
	if out, ok := r.git("gc", "--quiet"); !ok {
		t.Fatalf("git gc after the kill loop: %s", out)
	}
	r.checkRepo()
}
