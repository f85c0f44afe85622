package gitrepo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/vaulttest"
)

// What one commit of one file three folders deep costs the file system,
// counted by strace around a real Commit and UpdateIndex in a child
// process: the files it creates, the folders it makes, the modes it
// changes. On the machine of docs/PERFORMANCE.md creating a file costs
// tens of times a write, so the budget is git's own for the same commit:
// one file a loose object (here a blob, four trees and the commit), one
// marker each for the branch's and the index's lock files, no more; no
// mkdir of a fan-out folder that is there, no chmod (an object is created
// read-only), no look at the object's name before its rename. The git
// binary must find the result whole.
func TestCommitFileSystemCalls(t *testing.T) {
	if dir := os.Getenv("GITREPO_SYSCALL_CHILD"); dir != "" {
		commitInChild(t, dir)
		return
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("needs strace")
	}
	if !vaulttest.HasGit() {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	git := vaulttest.Git{Dir: dir}
	git.Run(t, "init", "-q", "-b", "main")
	r, err := openLikeAVault(dir)
	if err != nil {
		t.Fatal(err)
	}
	commitFiles(t, r, "first", map[string]string{"ledger/2026/11/29.jsonl": "one\n", "MEMORY.md": "# m\n"})
	// Every fan-out folder there, as in a repository written for a while.
	for i := range 256 {
		os.Mkdir(filepath.Join(dir, ".git", "objects", fmt.Sprintf("%02x", i)), 0o700)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-qq", "-o", trace,
		"-e", "trace=openat,openat2,mkdir,mkdirat,chmod,fchmod,fchmodat,newfstatat,stat,lstat,rename,renameat,renameat2",
		os.Args[0], "-test.run", "^TestCommitFileSystemCalls$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GITREPO_SYSCALL_CHILD="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	begin, end := strings.Index(text, "commit-begin"), strings.Index(text, "commit-end")
	if begin < 0 || end < begin {
		t.Fatalf("the child's markers are not in the trace:\n%s", text)
	}
	var created, mkdirs, chmods, looks []string
	for _, line := range strings.Split(text[begin:end], "\n") {
		switch {
		case strings.Contains(line, "O_CREAT") && strings.Contains(line, "O_EXCL") && !strings.Contains(line, "= -1"):
			created = append(created, line)
		case regexp.MustCompile(`\bmkdir(at)?\(`).MatchString(line) && strings.Contains(line, "/objects/"):
			mkdirs = append(mkdirs, line)
		case regexp.MustCompile(`\b(f?chmod(at)?)\(`).MatchString(line):
			chmods = append(chmods, line)
		case strings.Contains(line, "stat") && regexp.MustCompile(`/objects/[0-9a-f]{2}/[0-9a-f]{38}"`).MatchString(line) &&
			strings.Contains(line, "AT_SYMLINK_NOFOLLOW) = -1 ENOENT"):
			looks = append(looks, line) // os.Rename's Lstat of the name it renames to
		}
	}
	const objects, markers = 6, 2
	if len(created) != objects+markers {
		t.Errorf("the commit created %d files, want %d (%d objects, %d lock markers):\n%s",
			len(created), objects+markers, objects, markers, strings.Join(created, "\n"))
	}
	if len(mkdirs) > 0 {
		t.Errorf("the commit made fan-out folders that were there:\n%s", strings.Join(mkdirs, "\n"))
	}
	if len(chmods) > 0 {
		t.Errorf("the commit changed modes:\n%s", strings.Join(chmods, "\n"))
	}
	if len(looks) > 0 {
		t.Errorf("the commit looked at an object's name before renaming to it:\n%s", strings.Join(looks, "\n"))
	}
	if st := git.Run(t, "status", "--porcelain"); st != "" {
		t.Errorf("git status after the commit:\n%s", st)
	}
	vaulttest.Fsck(t, dir)
	// Every object read-only for its owner alone, no temporary one left.
	filepath.WalkDir(filepath.Join(dir, ".git", "objects"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), "tmp_obj_") {
			t.Errorf("a temporary object is left: %s", p)
		}
		if info, err := d.Info(); err == nil && info.Mode().Perm() != 0o400 {
			t.Errorf("%s has mode %v, want 0400", p, info.Mode().Perm())
		}
		return nil
	})
}

// commitInChild commits one change to the ledger of the repository at dir,
// between two stats of names the trace finds.
func commitInChild(t *testing.T, dir string) {
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "ledger", "2026", "11", "29.jsonl")
	if err := os.WriteFile(p, []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(p)
	changes := []*Change{{Path: "ledger/2026/11/29.jsonl", Content: []byte("one\ntwo\n"), Stat: info}}
	os.Stat("/commit-begin")
	h, err := r.Commit(changes, "memvault: two\n", testWho, time.Now())
	if err == nil {
		err = r.UpdateIndex(h, changes)
	}
	os.Stat("/commit-end")
	if err != nil {
		t.Fatal(err)
	}
}
