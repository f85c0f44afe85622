package gitrepo

// Running the git binary on the vault for a sync: an environment no outer
// git command can redirect, no prompt that could hang, and messages in a
// language the caller can read.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
)

// HasGitBinary reports whether the git binary is on the PATH: a sync uses it
// when it is (its transports, its merge machinery and the merge drivers it
// calls), and go-git when it is not.
func HasGitBinary() bool {
	_, err := exec.LookPath("git")
	return err == nil
}

// gitEnv is the environment of a git command run on the vault. Variables
// that point git at another repository, index or object store (set, for
// instance, when memvault runs from a git hook of another repository) are
// removed; git never prompts for credentials, which would hang a sync
// run from a hook; messages are in English, which the caller parses; and
// commits are made as who.
func gitEnv(who Signature) []string {
	drop := map[string]bool{"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true,
		"GIT_OBJECT_DIRECTORY": true, "GIT_ALTERNATE_OBJECT_DIRECTORIES": true, "GIT_COMMON_DIR": true,
		"GIT_NAMESPACE": true, "GIT_PREFIX": true, "GIT_QUARANTINE_PATH": true, "GIT_REFLOG_ACTION": true,
		"LC_ALL": true, "LANGUAGE": true, "GIT_TERMINAL_PROMPT": true, "GIT_MERGE_AUTOEDIT": true,
		"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !drop[name] {
			env = append(env, kv)
		}
	}
	return append(env, "LC_ALL=C", "LANGUAGE=", "GIT_TERMINAL_PROMPT=0", "GIT_MERGE_AUTOEDIT=no",
		"GIT_AUTHOR_NAME="+who.Name, "GIT_AUTHOR_EMAIL="+who.Email,
		"GIT_COMMITTER_NAME="+who.Name, "GIT_COMMITTER_EMAIL="+who.Email)
}

// runGit runs git in the vault with args, bounded by ctx, and returns its
// combined output. A run cut short by ctx returns ctx's error.
func (r *Repo) runGit(ctx context.Context, who Signature, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", r.root}, args...)...)
	cmd.Env = gitEnv(who)
	cmd.Stdin = nil
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), ctx.Err()
	}
	return out.String(), err
}

// gitMessage is the gist of git's output for an error message: its fatal
// or error lines, else its last line, on one line.
func gitMessage(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "fatal: ") || strings.HasPrefix(l, "error: ") {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		s := strings.TrimSpace(out)
		if s == "" {
			return "no output"
		}
		return strings.TrimSpace(s[strings.LastIndex(s, "\n")+1:])
	}
	return strings.Join(keep, "; ")
}

// isExit reports whether err is git exiting with a status (as opposed to
// git not starting, or being killed).
func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.Exited()
}
