package gc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/repair"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

// killedRun leaves what a gc killed with its process group leaves: its
// mark in .locks naming a process that is gone, and git's lock files taken
// while it ran.
func killedRun(t *testing.T, v *vault.Vault, locks ...string) {
	t.Helper()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mark := "memvault gc run\nstart " + strconv.FormatInt(time.Now().Add(-time.Second).UnixNano(), 10) +
		"\npid " + strconv.Itoa(dead.Process.Pid) + " 1\n"
	if err := os.WriteFile(filepath.Join(v.Root, ".locks", "gc-run"), []byte(mark), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, l := range locks {
		p := filepath.Join(v.Root, ".git", filepath.FromSlash(l))
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte("0000000000000000000000000000000000000000\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func gitLocks(t *testing.T, v *vault.Vault) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(filepath.Join(v.Root, ".git"), func(p string, e os.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(p, ".lock") || filepath.Base(p) == "packed-refs.new") {
			rel, _ := filepath.Rel(filepath.Join(v.Root, ".git"), p)
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	return found
}

// TestKilledGCLocksCleared (issue 33, item 4): the lock files a killed gc
// left (the branch's, packed-refs' and the file git writes them into, the reflog's, the commit graph's,
// gc.pid.lock) no longer block: the next write clears them and commits,
// and so do gc and repair; git fsck is clean after.
func TestKilledGCLocksCleared(t *testing.T) {
	if !vaulttest.HasGit() || runtime.GOOS != "linux" {
		t.Skip("needs git, and /proc to tell a live git's locks (elsewhere none are cleared)")
	}
	left := []string{"refs/heads/main.lock", "packed-refs.lock", "logs/refs/heads/main.lock",
		"objects/info/commit-graph.lock", "gc.pid.lock", "HEAD.lock", "packed-refs.new"}
	v := testvault.New(t)
	testvault.Remember(t, v, "before")
	killedRun(t, v, left...)
	testvault.Remember(t, v, "the next write")
	if l := gitLocks(t, v); len(l) != 0 {
		t.Fatalf("left after the next write: %v", l)
	}
	killedRun(t, v, left...)
	if _, err := Run(v, Options{Engine: EngineGit}); err != nil {
		t.Fatalf("gc after a killed gc: %v", err)
	}
	killedRun(t, v, left...)
	if _, err := Run(v, Options{Engine: EngineGoGit}); err != nil {
		t.Fatalf("go-git gc after a killed gc: %v", err)
	}
	killedRun(t, v, left...)
	rep, err := repair.Run(v, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.StaleLocks) != len(left) {
		t.Fatalf("repair removed %v, want %v", rep.StaleLocks, left)
	}
	testvault.Remember(t, v, "after")
	testvault.MustVerify(t, v)
	vaulttest.Fsck(t, v.Root)
	if _, err := os.Stat(filepath.Join(v.Root, ".locks", "gc-run")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the mark is still there: %v", err)
	}
}

// TestLiveGitLocksKept: a lock file is never cleared while a git process
// works in the vault (here git cat-file --batch, waiting on its input, its
// working folder the vault's), nor one taken before the killed run started
// (a person's, left by their own killed git): the write fails busy and
// names the file, as before, and the lock file is still there.
func TestLiveGitLocksKept(t *testing.T) {
	if !vaulttest.HasGit() || runtime.GOOS != "linux" {
		t.Skip("needs git, and /proc to tell a live git's locks (elsewhere none are cleared)")
	}
	v := testvault.New(t)
	testvault.Remember(t, v, "before")
	lock := filepath.Join(v.Root, ".git", "refs", "heads", "main.lock")

	git := exec.Command("git", "-C", v.Root, "cat-file", "--batch")
	stdin, err := git.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := git.Start(); err != nil {
		t.Fatal(err)
	}
	// Until it has made the vault its working folder.
	root, _ := filepath.EvalSymlinks(v.Root)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(git.Process.Pid) + "/comm")
		cwd, _ := os.Readlink("/proc/" + strconv.Itoa(git.Process.Pid) + "/cwd")
		if strings.TrimSpace(string(comm)) == "git" && cwd == root {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("git cat-file did not start in the vault (comm %q, cwd %q)", comm, cwd)
		}
	}
	killedRun(t, v, "refs/heads/main.lock")
	if _, err := tryRemember(v, "while git runs"); !errors.Is(err, vault.ErrBusy) {
		t.Fatalf("write while a git process works in the vault: %v, want busy", err)
	}
	if _, err := Run(v, Options{Engine: EngineGoGit, LockTimeout: time.Second}); !errors.Is(err, vault.ErrBusy) {
		t.Fatalf("gc while a git process works in the vault after a killed gc: %v, want busy", err)
	}
	stdin.Close()
	git.Wait()
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the lock a live git could hold was removed: %v", err)
	}

	os.Remove(lock)
	os.Remove(filepath.Join(v.Root, ".locks", "gc-run"))
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	mark := "memvault gc run\nstart " + strconv.FormatInt(time.Now().Add(time.Hour).UnixNano(), 10) + "\npid 999999999 1\n"
	os.WriteFile(filepath.Join(v.Root, ".locks", "gc-run"), []byte(mark), 0o600)
	if _, err := tryRemember(v, "older lock"); !errors.Is(err, vault.ErrBusy) {
		t.Fatalf("write with a lock older than the run: %v, want busy", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("a lock taken before the run was removed: %v", err)
	}
}

func tryRemember(v *vault.Vault, text string) (*vault.Result, error) {
	return v.Update(vault.TxOptions{LockTimeout: time.Second}, func(tx *vault.Tx) error {
		_, err := memory.Remember(tx, memory.Input{Text: text})
		return err
	})
}
