package hooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"
	"github.com/memvault/memvault/vault/canonical"
	"github.com/memvault/memvault/vault/configedit"
)

// Codex runs a project's hooks only when two things hold, both recorded in
// the user's config.toml ($CODEX_HOME/config.toml, else
// ~/.codex/config.toml), and skips them silently otherwise:
//
//   - the project is trusted: `[projects."<root>"] trust_level = "trusted"`,
//     where <root> is the git work tree's root (the folder itself outside
//     git), exactly: no parent folder's trust counts, and neither does a
//     subfolder's. An untrusted project's whole .codex/ layer is ignored.
//     User-scope hooks ($CODEX_HOME/hooks.json) need no project trust.
//   - each hook is trusted: `[hooks.state."<key>"] trusted_hash =
//     "sha256:<hex>"`, key <hooks.json path>:<event_snake>:<group>:<handler>,
//     the hash over the normalised handler (codexHookHash). A hook whose
//     command or timeout changed since it was trusted no longer matches
//     and is skipped ("modified"); `enabled = false` turns one off.
//
// Checked against Codex 0.169.0's app-server (hooks/list reports the key,
// the current hash and the trust status of each hook it would run):
// docs/HARNESSES.md, "What doctor checks".

// CodexTrust is what Codex's config.toml holds about trust.
type CodexTrust struct {
	Projects map[string]struct {
		TrustLevel string `toml:"trust_level"`
	} `toml:"projects"`
	Hooks struct {
		State map[string]CodexHookState `toml:"state"`
	} `toml:"hooks"`
}

// CodexHookState is the trust recorded for one hook.
type CodexHookState struct {
	TrustedHash string `toml:"trusted_hash"`
	Enabled     *bool  `toml:"enabled"`
}

// codexConfigPath is the user's Codex config.toml.
func (in *Installer) codexConfigPath() string {
	if ch := in.Env("CODEX_HOME"); ch != "" {
		return filepath.Join(ch, "config.toml")
	}
	return filepath.Join(in.Home, ".codex", "config.toml")
}

// ReadCodexTrust reads the trust Codex recorded in a config.toml; a file
// that does not exist trusts nothing.
func ReadCodexTrust(path string) (CodexTrust, error) {
	var t CodexTrust
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	if _, err := toml.Decode(string(data), &t); err != nil {
		return t, err
	}
	return t, nil
}

// codexHooksFile is hooks.json as Codex reads it, handler by handler.
type codexHooksFile struct {
	Hooks map[string][]struct {
		Matcher *string        `json:"matcher"`
		Hooks   []codexHandler `json:"hooks"`
	} `json:"hooks"`
}

type codexHandler struct {
	Type          string   `json:"type"`
	Command       string   `json:"command"`
	Timeout       *float64 `json:"timeout"`
	Async         *bool    `json:"async"`
	StatusMessage *string  `json:"statusMessage"`
}

// CodexHook is one of memvault's handlers in a Codex hooks.json, with the
// key and hash Codex's trust of it is recorded under.
type CodexHook struct {
	Key   string // <hooks.json path>:<event_snake>:<group>:<handler>
	Event string // snake case, as in the key
	Hash  string // "sha256:<hex>"
}

// CodexHooks lists memvault's handlers in the hooks.json at path (an
// absolute path, as Codex names it in the keys), with their trust keys and
// hashes, in the file's order of events (sorted) and handlers.
func CodexHooks(path string, data []byte) ([]CodexHook, error) {
	var doc codexHooksFile
	if err := configedit.Decode(data, configedit.JSONC, &doc); err != nil {
		return nil, err
	}
	events := make([]string, 0, len(doc.Hooks))
	for ev := range doc.Hooks {
		events = append(events, ev)
	}
	sort.Strings(events)
	var out []CodexHook
	for _, ev := range events {
		snake := codexSnake(ev)
		for gi, g := range doc.Hooks[ev] {
			for hi, h := range g.Hooks {
				if !isOurs(h.Command, "codex") {
					continue
				}
				out = append(out, CodexHook{
					Key:   fmt.Sprintf("%s:%s:%d:%d", path, snake, gi, hi),
					Event: snake,
					Hash:  codexHookHash(ev, g.Matcher, h),
				})
			}
		}
	}
	return out, nil
}

// codexSnake turns a hook event's name into the snake case of Codex's
// trust keys: SessionStart → session_start.
func codexSnake(event string) string {
	var b strings.Builder
	for i, r := range event {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// codexHookHash is the hash Codex trusts a handler under: "sha256:" and the
// hex SHA-256 of the compact JSON, keys sorted, of
// {"event_name", "hooks": [{"async", "command", "timeout", "type"}],
// "matcher" (only when set)}, the timeout the effective one in seconds
// (600 by default; SessionEnd: 1 by default, at most 3). A statusMessage,
// when set, is part of it as "statusMessage". It hashes the
// configuration, not the script a command runs.
func codexHookHash(event string, matcher *string, h codexHandler) string {
	timeout := int64(600)
	if event == "SessionEnd" {
		timeout = 1
	}
	if h.Timeout != nil {
		timeout = int64(*h.Timeout)
	}
	if event == "SessionEnd" && timeout > 3 {
		timeout = 3
	}
	handler := map[string]any{"async": h.Async != nil && *h.Async, "command": h.Command, "timeout": timeout, "type": h.Type}
	if h.StatusMessage != nil {
		handler["statusMessage"] = *h.StatusMessage
	}
	id := map[string]any{"event_name": codexSnake(event), "hooks": []any{handler}}
	if matcher != nil {
		id["matcher"] = *matcher
	}
	var buf bytes.Buffer
	_ = canonical.WriteRust(&buf, id) // a map of strings, bools and int64s cannot fail
	sum := sha256.Sum256(buf.Bytes())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// codexTrust adds to w what Codex's config.toml says stops memvault's
// hooks in data (the hooks.json doctor found) from running.
func (in *Installer) codexTrust(w *Wiring, data []byte) {
	cfg := in.codexConfigPath()
	trust, err := ReadCodexTrust(cfg)
	if err != nil {
		w.fail("cannot read Codex's trust from "+cfg+": "+oneLine(err.Error()), "fix "+cfg+" by hand (Codex will not start with it either)")
		return
	}
	if in.Scope == ScopeProject {
		root := in.Project
		level, found := trust.projectLevel(root)
		switch {
		case level == "trusted":
		case found && level == "untrusted":
			w.fail("Codex marks the project "+root+" untrusted ("+cfg+"): it ignores the project's .codex/ folder, memvault's hooks included",
				"set trust_level = \"trusted\" under [projects."+strconv.Quote(root)+"] in "+cfg)
		default:
			w.fail("the project "+root+" is not trusted in Codex ("+cfg+"): Codex ignores the project's .codex/ folder, memvault's hooks included",
				"start codex in "+root+" and trust the folder, or add [projects."+strconv.Quote(root)+"] trust_level = \"trusted\" to "+cfg)
		}
	}
	hooks, err := CodexHooks(w.Config, data)
	if err != nil {
		return // the wiring check above already failed on it
	}
	var untrusted, modified, disabled []string
	for _, h := range hooks {
		st, ok := trust.hookState(h.Key)
		switch {
		case ok && st.Enabled != nil && !*st.Enabled:
			disabled = append(disabled, h.Event)
		case !ok || st.TrustedHash == "":
			untrusted = append(untrusted, h.Event)
		case st.TrustedHash != h.Hash:
			modified = append(modified, h.Event)
		}
	}
	if len(untrusted) > 0 {
		w.fail(fmt.Sprintf("%s not trusted in Codex, which skips them: %s", countOf(len(untrusted), len(hooks)), strings.Join(untrusted, ", ")),
			"start codex, open /hooks and trust the memvault hooks")
	}
	if len(modified) > 0 {
		w.fail(fmt.Sprintf("%s out of date in Codex: their command or timeout changed since they were trusted (a reinstall does that), so Codex skips them: %s",
			countOf(len(modified), len(hooks)), strings.Join(modified, ", ")),
			"start codex, open /hooks and trust the memvault hooks again")
	}
	if len(disabled) > 0 {
		w.fail(fmt.Sprintf("%s switched off in Codex (enabled = false in %s): %s",
			countOf(len(disabled), len(hooks)), cfg, strings.Join(disabled, ", ")),
			"start codex, open /hooks and enable the memvault hooks")
	}
}

// projectLevel is the trust level recorded for the project root, found by
// its path as given or with its links resolved.
func (t CodexTrust) projectLevel(root string) (string, bool) {
	for _, p := range samePaths(root) {
		if e, ok := t.Projects[p]; ok {
			return e.TrustLevel, true
		}
	}
	return "", false
}

// hookState finds a hook's trust entry by its key, its path as given or
// with links resolved.
func (t CodexTrust) hookState(key string) (CodexHookState, bool) {
	file, rest, _ := strings.Cut(key, ".json:")
	for _, p := range samePaths(file + ".json") {
		if st, ok := t.Hooks.State[p+":"+rest]; ok {
			return st, true
		}
	}
	return CodexHookState{}, false
}

// samePaths is path, then path with its symbolic links resolved when that
// differs.
func samePaths(path string) []string {
	out := []string{path}
	if r, err := filepath.EvalSymlinks(path); err == nil && r != path {
		out = append(out, r)
	}
	return out
}

// countOf says how many of memvault's hooks: "all 6 of memvault's hooks
// are", "2 of memvault's 6 hooks are", "memvault's hook is".
func countOf(n, of int) string {
	switch {
	case of == 1:
		return "memvault's hook is"
	case n == of:
		return fmt.Sprintf("all %d of memvault's hooks are", n)
	case n == 1:
		return fmt.Sprintf("1 of memvault's %d hooks is", of)
	}
	return fmt.Sprintf("%d of memvault's %d hooks are", n, of)
}
