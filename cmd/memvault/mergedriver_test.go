package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/vaulttest"
)

// These tests merge two clones of a vault with the git binary, the way a
// person's `git pull` does, through the merge driver registered in each
// clone's .git/config. The driver is this test binary's copy on PATH under
// the name memvault (testscript.Main puts it there), so git runs the real
// command.

// clonePair is a vault with a little history, cloned twice; A and B each
// wrote events and transcript lines of one shared session since.
type clonePair struct {
	a, b       string // the clones' roots
	aTip, bTip string // their commits before any merge
	ids        map[string]bool
	env        []string
}

func newClonePair(t *testing.T) *clonePair {
	t.Helper()
	if !vaulttest.HasGit() {
		t.Skip("needs the git binary")
	}
	bin := plainMemvault(t)
	dir := t.TempDir()
	p := &clonePair{ids: map[string]bool{}, env: vaulttest.Sandbox(filepath.Join(dir, "home"))}
	origin := filepath.Join(dir, "o", ".memory")
	v, _, err := vault.Init(origin)
	if err != nil {
		t.Fatal(err)
	}
	p.write(t, v, "base", 3, 1)
	p.a, p.b = filepath.Join(dir, "A", ".memory"), filepath.Join(dir, "B", ".memory")
	for _, root := range []string{p.a, p.b} {
		vaulttest.Git{Dir: dir, Env: p.env}.Run(t, "clone", "-q", origin, root)
		if _, err := gitrepo.RegisterMergeDrivers(root, bin); err != nil {
			t.Fatal(err)
		}
	}
	for i, root := range []string{p.a, p.b} {
		v, err := vault.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		p.write(t, v, fmt.Sprintf("from %c", 'A'+i), 4+i, 2-i)
	}
	p.aTip = strings.TrimSpace(p.git(p.a).Run(t, "rev-parse", "HEAD"))
	p.bTip = strings.TrimSpace(p.git(p.b).Run(t, "rev-parse", "HEAD"))
	return p
}

func (p *clonePair) git(dir string) vaulttest.Git { return vaulttest.Git{Dir: dir, Env: p.env} }

// write records n events, one transaction each, and m messages of the
// session both clones share, committed with the last event.
func (p *clonePair) write(t *testing.T, v *vault.Vault, what string, n, m int) {
	t.Helper()
	for i := 0; i < n; i++ {
		_, err := v.Update(vault.TxOptions{Command: "test"}, func(tx *vault.Tx) error {
			ev := tx.Append(&vault.Event{Kind: "fact", Text: fmt.Sprintf("%s %d", what, i)})
			p.ids[ev.ID] = true
			if i == n-1 && m > 0 {
				ref := transcript.Ref{Agent: "default", Session: "shared"}
				var msgs []transcript.Message
				for j := 0; j < m; j++ {
					msgs = append(msgs, transcript.Message{Role: transcript.RoleUser, Text: fmt.Sprintf("%s says %d", what, j)})
				}
				if _, _, err := tx.AppendText(ref, msgs); err != nil {
					return err
				}
				return tx.CommitTranscript(ref)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// files reads every file under dir of the vault at root, by path.
func files(t *testing.T, root, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGitPullMerges(t *testing.T) {
	t.Parallel()
	p := newClonePair(t)
	out := p.git(p.a).Run(t, "pull", "--no-rebase", "--no-edit", p.b, "main")
	if strings.Contains(out, "CONFLICT") {
		t.Fatalf("git pull reported a conflict:\n%s", out)
	}
	if st := p.git(p.a).Run(t, "status", "--porcelain"); st != "" {
		t.Errorf("the work tree is not clean after the pull:\n%s", st)
	}

	// Every event of both sides, once.
	seen := map[string]int{}
	for path, data := range files(t, p.a, "ledger") {
		if bytes.Contains(data, []byte("<<<<<<<")) {
			t.Errorf("%s holds conflict markers", path)
		}
		for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			id := string(l[bytes.Index(l, []byte(`"id":"`))+6:])
			seen[id[:strings.IndexByte(id, '"')]]++
		}
	}
	for id := range p.ids {
		if seen[id] != 1 {
			t.Errorf("event %s is in the merged ledger %d times", id, seen[id])
		}
	}
	// Every message of both sides, once.
	parts := files(t, p.a, "transcripts")
	var all []byte
	for _, data := range parts {
		all = append(all, data...)
	}
	for _, text := range []string{"base says 0", "from A says 0", "from A says 1", "from B says 0"} {
		if n := bytes.Count(all, []byte(`"text":"`+text+`"`)); n != 1 {
			t.Errorf("message %q is in the merged transcript %d times", text, n)
		}
	}

	// B merging A's side the other way round writes the same bytes.
	mirror := filepath.Join(t.TempDir(), ".memory")
	p.git(filepath.Dir(mirror)).Run(t, "clone", "-q", p.b, mirror)
	if _, err := gitrepo.RegisterMergeDrivers(mirror, plainMemvault(t)); err != nil {
		t.Fatal(err)
	}
	p.git(mirror).Run(t, "fetch", "-q", p.a, p.aTip)
	p.git(mirror).Run(t, "merge", "-q", "--no-edit", p.aTip)
	for _, dir := range []string{"ledger", "transcripts"} {
		x, y := files(t, p.a, dir), files(t, mirror, dir)
		if len(x) != len(y) {
			t.Errorf("%s: %d files in A, %d in B's merge", dir, len(x), len(y))
		}
		for path, data := range x {
			if !bytes.Equal(data, y[path]) {
				t.Errorf("%s differs between the two merges:\nA:\n%s\nB:\n%s", path, data, y[path])
			}
		}
	}
	vaulttest.Fsck(t, p.a)
}

// TestGitPullVerifies is the promise: a person's plain git pull
// leaves a vault that verifies, and that takes the next write. It needs the
// ledger's chain to be checked as a DAG (an event after its prev, not
// right after it).
func TestGitPullVerifies(t *testing.T) {
	t.Parallel()
	p := newClonePair(t)
	p.git(p.a).Run(t, "pull", "--no-rebase", "--no-edit", p.b, "main")
	v, err := vault.Open(p.a)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := v.Verify()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		var lines []string
		for _, pr := range rep.Problems {
			lines = append(lines, pr.String())
		}
		sort.Strings(lines)
		t.Fatalf("verify after the pull:\n%s", strings.Join(lines, "\n"))
	}
	p.write(t, v, "after", 1, 0)
	if rep, err = v.Verify(); err != nil || !rep.OK {
		t.Fatalf("verify after the next write: %v %+v", err, rep)
	}
}
