package gitrepo

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/memvault/memvault/vault/fault"
)

// Staged returns the blob hash of every file staged under prefix (a folder,
// "ledger/"), as the next `git commit` would commit it. It asks git
// (`git ls-files --stage`), which reads every index form git writes; it is
// for git's own hooks (pre-commit), where git is installed by definition.
// A path staged in conflict (stage 1-3) maps to "", so that a caller can
// refuse it.
func (r *Repo) Staged(prefix string) (map[string]string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fault.New(fault.ErrInvalid, "git is not installed: what is staged can only be read with git")
	}
	cmd := exec.Command("git", "-C", r.root, "ls-files", "--stage", "-z", "--", prefix)
	// Under a hook git sets GIT_INDEX_FILE, which names the index the
	// commit is built from: keep it, but not GIT_DIR/GIT_WORK_TREE, which
	// may be relative to another folder.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "GIT_DIR" && k != "GIT_WORK_TREE" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %v", err)
	}
	staged := make(map[string]string)
	for _, rec := range bytes.Split(out, []byte{0}) {
		// <mode> SP <hash> SP <stage> TAB <path>
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			continue
		}
		f := strings.Fields(string(meta))
		if len(f) != 3 {
			continue
		}
		if f[2] != "0" {
			staged[string(path)] = ""
			continue
		}
		staged[string(path)] = f[1]
	}
	return staged, nil
}
