package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/scope"
)

// Git hooks are shell scripts with a marked memvault block. The block is
// inserted after the shebang of a hook that exists, so the person's own hook
// keeps running after it (chaining), and removed again by uninstall. Each
// block clears GIT_DIR and GIT_INDEX_FILE, which git sets for hooks and which
// would otherwise point memvault's git at the wrong repository, and does
// nothing when the memvault binary is gone.
const (
	blockStart = "# >>> memvault >>>"
	blockEnd   = "# <<< memvault <<<"
)

// GitHook is one hook memvault installs in a repository.
type GitHook struct {
	Name string // pre-commit, post-merge, post-checkout, post-commit
	Body string // shell lines run inside the block
}

// VaultGitHooks protect the vault repository: a commit that breaks the
// ledger, as staged (what the commit takes, not the work tree), is refused; after a merge the heads are re-rendered and the index
// rebuilt; after a checkout the index is rebuilt.
func VaultGitHooks(bin, vaultRoot string) []GitHook {
	mv := "env -u GIT_DIR -u GIT_INDEX_FILE -u GIT_WORK_TREE " + shellQuote(bin) + " --vault " + shellQuote(vaultRoot)
	// pre-commit keeps GIT_INDEX_FILE: it names the index the commit is
	// made from (a temporary one for commit -a or commit <paths>).
	staged := "env -u GIT_DIR -u GIT_WORK_TREE " + shellQuote(bin) + " --vault " + shellQuote(vaultRoot)
	return []GitHook{
		{Name: "pre-commit", Body: `if ! ` + staged + ` verify --staged >/dev/null 2>"${TMPDIR:-/tmp}/memvault-verify.$$"; then
  echo "memvault: this commit would leave the ledger broken:" >&2
  cat "${TMPDIR:-/tmp}/memvault-verify.$$" >&2
  rm -f "${TMPDIR:-/tmp}/memvault-verify.$$"
  echo "hint: stage the ledger as memvault wrote it (memvault repair fixes a broken one), or commit with --no-verify to override" >&2
  exit 1
fi
rm -f "${TMPDIR:-/tmp}/memvault-verify.$$"`},
		{Name: "post-merge", Body: mv + ` render --all-threads >/dev/null 2>&1 || true
` + mv + ` reindex >/dev/null 2>&1 || true`},
		{Name: "post-checkout", Body: mv + ` reindex >/dev/null 2>&1 || true`},
	}
}

// ProjectGitHooks record a project's code commits in the vault, linked to
// the session working on that project.
func ProjectGitHooks(bin string) []GitHook {
	return []GitHook{{Name: "post-commit",
		Body: "env -u GIT_DIR -u GIT_INDEX_FILE -u GIT_WORK_TREE " + shellQuote(bin) + " hook git post-commit </dev/null >/dev/null 2>&1 || true"}}
}

// hooksDir asks git where the repository's hooks live, which honours
// core.hooksPath.
func hooksDir(repo string) (string, error) {
	cmd := exec.Command("git", "-C", repo, "rev-parse", "--git-path", "hooks")
	cmd.Env = append(os.Environ(), "GIT_DIR=", "GIT_INDEX_FILE=")
	cmd.Env = filterEnv(cmd.Env, "GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git hooks: %s is not a git repository (or git is not installed)", repo)
	}
	dir := strings.TrimSpace(string(out))
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(repo, dir)
	}
	return dir, nil
}

func filterEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || k == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// PlanGitHooks computes the hook files to write (or, with remove, to clean)
// in the repository at repo.
func PlanGitHooks(repo string, hs []GitHook, bin string, remove bool) ([]Change, error) {
	dir, err := hooksDir(repo)
	if err != nil {
		return nil, err
	}
	var out []Change
	for _, h := range hs {
		path := filepath.Join(dir, h.Name)
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("git hooks: read %s: %w", path, err)
		}
		rest := stripBlock(string(old))
		var next string
		if remove {
			next = rest
			if strings.TrimSpace(strings.TrimPrefix(next, "#!/bin/sh")) == "" {
				if len(old) == 0 {
					out = append(out, Change{Path: path, Action: "unchanged"})
				} else {
					out = append(out, Change{Path: path, Action: "remove", Note: "held only memvault's block"})
				}
				continue
			}
		} else {
			block := blockStart + "\nif [ -x " + shellQuote(bin) + " ]; then\n" + h.Body + "\nfi\n" + blockEnd + "\n"
			shebang, body := "#!/bin/sh\n", rest
			if strings.HasPrefix(rest, "#!") {
				i := strings.IndexByte(rest, '\n')
				if i < 0 {
					i = len(rest) - 1
				}
				shebang, body = rest[:i+1], rest[i+1:]
			}
			next = shebang + block + body
		}
		if bytes.Equal(old, []byte(next)) {
			out = append(out, Change{Path: path, Action: "unchanged"})
			continue
		}
		out = append(out, Change{Path: path, Action: "write", Content: []byte(next)})
	}
	return out, nil
}

// stripBlock removes memvault's block from a hook script.
func stripBlock(s string) string {
	i := strings.Index(s, blockStart)
	if i < 0 {
		return s
	}
	j := strings.Index(s[i:], blockEnd)
	if j < 0 {
		return s
	}
	end := i + j + len(blockEnd)
	if end < len(s) && s[end] == '\n' {
		end++
	}
	return s[:i] + s[end:]
}

// ApplyGitHooks writes planned hook files, executable: whoever may read a
// hook may run it, and nobody else. A new hook gets its read bits from the
// umask (private in the vault, the person's own in a project); a hook that
// exists keeps its own, so a private one stays private.
func ApplyGitHooks(changes []Change) error {
	if err := Apply(changes); err != nil {
		return err
	}
	for _, c := range changes {
		if c.Action == "write" {
			info, err := os.Stat(c.Path)
			if err != nil {
				return err
			}
			perm := info.Mode().Perm()
			if err := os.Chmod(c.Path, perm|(perm&0o444)>>2); err != nil {
				return err
			}
		}
	}
	return nil
}

// RecordCommit records the project's latest code commit (run from its
// post-commit hook) as a code.commit event in the project's thread, in the
// session most recently started in that thread.
func RecordCommit(v *vault.Vault, cwd, agent string) error {
	cmd := exec.Command("git", "-C", cwd, "log", "-1", "--format=%H%n%s")
	cmd.Env = filterEnv(os.Environ(), "GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git post-commit: read the commit: %v", err)
	}
	sha, subject, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	thread := scope.ProjectThread(cwd)
	st, err := v.LoadState()
	if err != nil {
		return err
	}
	session := ""
	for i := len(st.Rows) - 1; i >= 0; i-- {
		if r := st.Rows[i]; r.Kind == "session.started" && r.Thread == thread && r.Agent == agent {
			session = r.Session
			break
		}
	}
	_, err = v.Update(vault.TxOptions{Command: "hook git post-commit", Agent: agent, Session: session,
		Harness: "git", LockTimeout: eventLockWait}, func(tx *vault.Tx) error {
		data, _ := json.Marshal(map[string]string{"commit": sha, "repo": filepath.Base(scope.ProjectRoot(cwd))})
		tx.Append(&vault.Event{Kind: "code.commit", Thread: thread, Text: subject, Data: data, Source: "git"})
		return nil
	})
	if errors.Is(err, vault.ErrCorrupt) || errors.Is(err, vault.ErrInvalid) {
		// The log says what the vault needs, not only what it refused.
		if h, herr := v.Health(); herr == nil && !h.OK() {
			return fmt.Errorf("commit %s not recorded: %s", vault.ShortHash(sha), h.Summary())
		}
	}
	return err
}
