package gitrepo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/vaulttest"
)

// BenchmarkLockWindow measures how long a commit holds git's lock files:
// index.lock, which every `git add` and `git commit` of a person needs and
// fails at once without, and the branch's lock. One iteration is one
// transaction's commit and index update, one file changed, in a repository
// of 100 and of 10,000 files (git's index about 10 KB and 1 MB). Reported:
// the median, 90th percentile and longest time each lock file existed,
// from its creation to its rename, in microseconds.
func BenchmarkLockWindow(b *testing.B) {
	if !vaulttest.HasGit() {
		b.Skip("the repository is made with git")
	}
	for _, files := range []int{100, 10000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			dir := b.TempDir()
			git := vaulttest.Git{Dir: dir}
			git.Run(b, "init", "-q", "-b", "main")
			for i := range files {
				p := filepath.Join(dir, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.md", i))
				os.MkdirAll(filepath.Dir(p), 0o700)
				if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o600); err != nil {
					b.Fatal(err)
				}
			}
			git.Run(b, "add", ".")
			git.Run(b, "commit", "-q", "-m", "base")
			r, err := openLikeAVault(dir)
			if err != nil {
				b.Fatal(err)
			}
			held := map[string][]time.Duration{}
			r.lockHeld = func(name string, d time.Duration) { held[name] = append(held[name], d) }
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := "d00/f00000.md"
				data := []byte(fmt.Sprintf("change %d\n", i))
				if err := os.WriteFile(filepath.Join(dir, p), data, 0o600); err != nil {
					b.Fatal(err)
				}
				info, _ := os.Stat(filepath.Join(dir, p))
				changes := []*Change{{Path: p, Content: data, Stat: info}}
				h, err := r.Commit(changes, fmt.Sprintf("change %d\n", i), Signature{"m", "m@x"}, fixedTime)
				if err != nil {
					b.Fatal(err)
				}
				if err := r.UpdateIndex(h, changes); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for _, name := range []string{"index.lock", "main.lock"} {
				d := held[name]
				if len(d) != b.N {
					b.Fatalf("%s held %d times in %d commits", name, len(d), b.N)
				}
				slices.Sort(d)
				us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
				b.ReportMetric(us(d[len(d)/2]), name+"-p50-us")
				b.ReportMetric(us(d[len(d)*9/10]), name+"-p90-us")
				b.ReportMetric(us(d[len(d)-1]), name+"-max-us")
			}
		})
	}
}

// The index is made before its lock is taken, so a git command can replace
// it in between: a person's `git add` there must not be lost, and
// memvault's entries must still reach the index. Played at the point in
// between, for each index form: one file, split, and with a new shared
// index.
func TestIndexReplacedBeforeTheLockIsKept(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("needs git")
	}
	for _, split := range []string{"false", "true"} {
		t.Run("split="+split, func(t *testing.T) {
			dir := t.TempDir()
			git := func(args ...string) string { t.Helper(); return vaulttest.Git{Dir: dir}.Run(t, args...) }
			write := func(name, text string) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			git("init", "-q", "-b", "main")
			git("config", "core.splitIndex", split)
			write("memory.md", "first\n")
			git("add", ".")
			git("commit", "-q", "-m", "base")
			r, err := openLikeAVault(dir)
			if err != nil {
				t.Fatal(err)
			}
			for i, name := range []string{"person-1.md", "person-2.md"} {
				write(name, "the person's "+name+"\n")
				played := false
				r.beforeIndexLock = func() {
					if !played {
						played = true
						git("add", name)
					}
				}
				text := fmt.Sprintf("written by memvault, %d\n", i)
				write("memory.md", text)
				info, _ := os.Stat(filepath.Join(dir, "memory.md"))
				changes := []*Change{{Path: "memory.md", Content: []byte(text), Stat: info}}
				h, err := r.Commit(changes, "memvault: memory\n", Signature{"m", "m@x"}, fixedTime)
				if err != nil {
					t.Fatal(err)
				}
				if err := r.UpdateIndex(h, changes); err != nil {
					t.Fatal(err)
				}
				if !played {
					t.Fatal("the git command was not played")
				}
			}
			if got, want := git("status", "--porcelain"), "A  person-1.md\nA  person-2.md\n"; got != want {
				t.Fatalf("git status after a person's add in the window:\n%s\nwant:\n%s", got, want)
			}
			if got := git("ls-files", "--stage", "memory.md"); !strings.Contains(got, blobOf(t, dir, "written by memvault, 1\n")) {
				t.Fatalf("memvault's entry is not in the index: %s", got)
			}
			vaulttest.Fsck(t, dir)
		})
	}
}

// blobOf is the id git gives a blob of text.
func blobOf(t *testing.T, dir, text string) string {
	t.Helper()
	cmd := exec.Command("git", "hash-object", "--stdin")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// A git command that holds git's index lock (a person's `git commit -a`,
// from its start to its own branch update) goes first: memvault does not
// move the branch under it, and moves it once the command is done. A lock
// held for longer than gitCommandWait (a commit's message editor left
// open, or a lock a killed git left) is not waited for.
func TestCommitWaitsForAGitCommand(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	git := func(args ...string) string { t.Helper(); return vaulttest.Git{Dir: dir}.Run(t, args...) }
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "a.md"), []byte("a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-q", "-m", "base")
	r, err := openLikeAVault(dir)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := r.Head()
	lock := filepath.Join(dir, ".git", "index.lock")
	commit := func(text string) error {
		changes := []*Change{{Path: "a.md", Content: []byte(text)}}
		_, err := r.Commit(changes, "memvault: "+text, Signature{"m", "m@x"}, fixedTime)
		return err
	}

	// a young lock: the commit waits for it
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- commit("while git runs\n") }()
	time.Sleep(gitCommandWait / 4) // time for the commit to reach the branch, were it not waiting
	if h, _ := r.Head(); h != before {
		t.Fatal("the branch moved while a git command held the index lock")
	}
	os.Remove(lock)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if h, _ := r.Head(); h == before {
		t.Fatal("the branch did not move once the git command was done")
	}

	// an old lock: not waited for, and left alone
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-10 * gitCommandWait)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	moved, _ := r.Head()
	if err := commit("with an editor open\n"); err != nil {
		t.Fatal(err)
	}
	if h, _ := r.Head(); h == moved {
		t.Fatal("the branch did not move past an old lock")
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("git's lock was touched: %v", err)
	}
}

// A memvault killed while it updates git's index leaves one of three
// things, by where the kill fell: a marker holding the new index (before
// the lock), the lock file itself, a hard link of that marker (between the
// lock and the rename), or a marker that is now the index (between the
// rename and the marker's removal). The next update removes each, leaves
// git's index right, and a person's git works again; only the middle one
// ever stood in git's way.
func TestLeftoversOfAKilledIndexUpdate(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("needs git")
	}
	for _, kill := range []string{"before the lock", "holding the lock", "after the rename"} {
		t.Run(kill, func(t *testing.T) {
			dir := t.TempDir()
			git := func(args ...string) string { t.Helper(); return vaulttest.Git{Dir: dir}.Run(t, args...) }
			write := func(name, text string) {
				t.Helper()
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			git("init", "-q", "-b", "main")
			write("memory.md", "first\n")
			git("add", ".")
			git("commit", "-q", "-m", "base")
			r, err := openLikeAVault(dir)
			if err != nil {
				t.Fatal(err)
			}
			idx := filepath.Join(dir, ".git", "index")
			l, err := r.prepareGitLock(idx, []byte("what the killed process meant to write"), false)
			if err != nil {
				t.Fatal(err)
			}
			switch kill {
			case "holding the lock":
				if err := l.take(); err != nil {
					t.Fatal(err)
				}
				if _, err := (vaulttest.Git{Dir: dir}).Try("add", "memory.md"); err == nil {
					t.Fatal("git add went through a held index.lock")
				}
			case "after the rename":
				if err := l.take(); err != nil {
					t.Fatal(err)
				}
				// the killed process's index, renamed into place, is
				// replaced by a real one, as its next update would
				if err := os.Rename(l.path, idx); err != nil {
					t.Fatal(err)
				}
				git("read-tree", "HEAD")
			}
			l.f.Close() // the process is gone

			write("memory.md", "second\n")
			info, _ := os.Stat(filepath.Join(dir, "memory.md"))
			changes := []*Change{{Path: "memory.md", Content: []byte("second\n"), Stat: info}}
			h, err := r.Commit(changes, "memvault: second\n", Signature{"m", "m@x"}, fixedTime)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.UpdateIndex(h, changes); err != nil {
				t.Fatalf("the update after the kill: %v", err)
			}
			if _, err := os.Lstat(idx + ".lock"); err == nil {
				t.Fatal("index.lock is still there")
			}
			if marks, _ := filepath.Glob(filepath.Join(dir, ".locks", gitLockMarkPrefix+"*")); len(marks) > 0 {
				t.Fatalf("markers left: %v", marks)
			}
			if got := git("status", "--porcelain"); got != "" {
				t.Fatalf("git status after the update:\n%s", got)
			}
			write("person.md", "the person's\n")
			git("add", "person.md")
			git("commit", "-q", "-m", "person")
			vaulttest.Fsck(t, dir)
		})
	}
}
