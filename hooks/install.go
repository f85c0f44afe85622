package hooks

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/memvault/memvault/vault/fileio"
)

//go:embed plugins
var plugins embed.FS

// Scope says where an installer writes: the project (the repository around
// the working directory) or the user's home.
type Scope string

// The install scopes.
const (
	ScopeProject Scope = "project"
	ScopeUser    Scope = "user"
)

// Installer changes one harness's configuration so that it calls memvault.
type Installer struct {
	Harness string
	Scope   Scope
	Project string // the project root
	Home    string // the user's home
	Bin     string // the memvault binary the hooks run
	Env     func(string) string
}

// Change is one file an install or uninstall writes or removes.
type Change struct {
	Path    string `json:"path"`
	Action  string `json:"action"` // write, remove, unchanged
	Content []byte `json:"-"`
	Note    string `json:"note,omitempty"`
}

// hookEvents lists, per harness with a JSON hook config, the native events
// memvault wires and the runtime event each calls.
var hookEvents = map[string][][2]string{
	"claude-code": {{"SessionStart", "session-start"}, {"UserPromptSubmit", "prompt-submit"}, {"Stop", "stop"},
		{"PreCompact", "pre-compaction"}, {"PostCompact", "compaction-complete"}, {"SessionEnd", "session-end"}},
	"codex": {{"SessionStart", "session-start"}, {"UserPromptSubmit", "prompt-submit"}, {"Stop", "stop"},
		{"PreCompact", "pre-compaction"}, {"PostCompact", "compaction-complete"}, {"SessionEnd", "session-end"}},
	"gemini": {{"SessionStart", "session-start"}, {"BeforeAgent", "prompt-submit"}, {"AfterAgent", "stop"},
		{"PreCompress", "pre-compaction"}, {"SessionEnd", "session-end"}},
}

// configPath is where a harness keeps the file memvault edits.
func (in *Installer) configPath() string {
	base := in.Project
	if in.Scope == ScopeUser {
		base = in.Home
	}
	switch in.Harness {
	case "claude-code":
		return filepath.Join(base, ".claude", "settings.json")
	case "codex":
		if in.Scope == ScopeUser {
			if ch := in.Env("CODEX_HOME"); ch != "" {
				return filepath.Join(ch, "hooks.json")
			}
		}
		return filepath.Join(base, ".codex", "hooks.json")
	case "gemini":
		return filepath.Join(base, ".gemini", "settings.json")
	case "opencode":
		if in.Scope == ScopeUser {
			return filepath.Join(base, ".config", "opencode", "plugins", "memvault.js")
		}
		return filepath.Join(base, ".opencode", "plugins", "memvault.js")
	case "openclaw":
		return filepath.Join(base, ".openclaw", "plugins", "memvault")
	}
	return ""
}

// command is the hook command line for a runtime event.
func (in *Installer) command(event string) string {
	return fmt.Sprintf("%s hook %s %s", shellQuote(in.Bin), in.Harness, event)
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isOurs recognises a hook command memvault installed, whatever binary path
// it was installed with: "<bin> hook <harness> <runtime event>".
func isOurs(command, harness string) bool {
	_, rest, ok := strings.Cut(strings.TrimSpace(command), " hook "+harness+" ")
	if !ok {
		return false
	}
	for _, e := range Events {
		if rest == string(e) {
			return true
		}
	}
	return false
}

// Plan computes the changes of an install (or, with remove, an uninstall)
// without writing anything.
func (in *Installer) Plan(remove bool) ([]Change, error) {
	if _, ok := Lookup(in.Harness); !ok {
		return nil, fmt.Errorf("install: unknown harness %q (want one of %s)", in.Harness, strings.Join(Names(), ", "))
	}
	switch in.Harness {
	case "opencode":
		return in.planFile(remove, "plugins/opencode/memvault.js", in.configPath())
	case "openclaw":
		return in.planOpenClaw(remove)
	}
	return in.planJSONHooks(remove)
}

// planJSONHooks merges memvault's hooks into a Claude Code, Codex or Gemini
// CLI settings file: other keys and other hooks are kept as they are; a
// second install changes nothing; uninstall removes only memvault's.
func (in *Installer) planJSONHooks(remove bool) ([]Change, error) {
	path := in.configPath()
	doc := map[string]any{}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if remove {
			return []Change{{Path: path, Action: "unchanged", Note: "no such file"}}, nil
		}
	case err != nil:
		return nil, fmt.Errorf("install: read %s: %w", path, err)
	case len(bytes.TrimSpace(old)) > 0:
		if err := json.Unmarshal(old, &doc); err != nil {
			return nil, fmt.Errorf("install: %s is not plain JSON (%v); add the hooks by hand (see docs/HARNESSES.md)", path, err)
		}
	}
	hooksObj, _ := doc["hooks"].(map[string]any)
	if hooksObj == nil {
		hooksObj = map[string]any{}
	}
	for _, pair := range hookEvents[in.Harness] {
		native, event := pair[0], pair[1]
		groups, _ := hooksObj[native].([]any)
		var kept []any
		for _, g := range groups {
			gm, ok := g.(map[string]any)
			if !ok {
				kept = append(kept, g)
				continue
			}
			hs, _ := gm["hooks"].([]any)
			var others []any
			for _, h := range hs {
				hm, _ := h.(map[string]any)
				if cmd, _ := hm["command"].(string); hm != nil && isOurs(cmd, in.Harness) {
					continue
				}
				others = append(others, h)
			}
			if len(others) == 0 && len(hs) > 0 {
				continue // a group that held only our hook
			}
			gm["hooks"] = others
			kept = append(kept, gm)
		}
		if !remove {
			ours := map[string]any{"type": "command", "command": in.command(event)}
			if in.Harness == "codex" && native == "SessionEnd" {
				ours["timeout"] = 3 // Codex allows session end at most 3 s
			}
			group := map[string]any{"hooks": []any{ours}}
			if in.Harness == "gemini" {
				group["matcher"] = "*"
			}
			kept = append(kept, group)
		}
		if len(kept) == 0 {
			delete(hooksObj, native)
		} else {
			hooksObj[native] = kept
		}
	}
	if len(hooksObj) == 0 {
		delete(doc, "hooks")
	} else {
		doc["hooks"] = hooksObj
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	if err == nil && jsonEqual(old, data) {
		return []Change{{Path: path, Action: "unchanged"}}, nil
	}
	if remove && len(doc) == 0 {
		return []Change{{Path: path, Action: "remove", Note: "held only memvault's hooks"}}, nil
	}
	c := Change{Path: path, Action: "write", Content: data}
	if in.Harness == "codex" && !remove {
		c.Note = "Codex runs only hooks the user trusts: start codex, open /hooks, and trust the memvault hooks (see docs/HARNESSES.md)"
	}
	return []Change{c}, nil
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// planFile writes (or removes) one plugin file, with the binary path baked in.
func (in *Installer) planFile(remove bool, src, dst string) ([]Change, error) {
	old, err := os.ReadFile(dst)
	exists := err == nil
	if remove {
		if !exists {
			return []Change{{Path: dst, Action: "unchanged", Note: "no such file"}}, nil
		}
		if !bytes.Contains(old, []byte("memvault")) {
			return nil, fmt.Errorf("uninstall: %s was not written by memvault; leaving it", dst)
		}
		return []Change{{Path: dst, Action: "remove"}}, nil
	}
	data, err := plugins.ReadFile(src)
	if err != nil {
		return nil, err
	}
	data = bytes.ReplaceAll(data, []byte("__MEMVAULT_BIN__"), []byte(strconv.Quote(in.Bin)))
	project := ""
	if in.Scope == ScopeProject {
		project = in.Project
	}
	data = bytes.ReplaceAll(data, []byte("__MEMVAULT_PROJECT__"), []byte(strconv.Quote(project)))
	if exists && bytes.Equal(old, data) {
		return []Change{{Path: dst, Action: "unchanged"}}, nil
	}
	return []Change{{Path: dst, Action: "write", Content: data}}, nil
}

// planOpenClaw writes the plugin folder and registers it in OpenClaw's
// config ($OPENCLAW_CONFIG_PATH, else ~/.openclaw/openclaw.json).
func (in *Installer) planOpenClaw(remove bool) ([]Change, error) {
	dir := in.configPath()
	var out []Change
	for _, f := range []string{"index.js", "package.json", "openclaw.plugin.json"} {
		cs, err := in.planFile(remove, "plugins/openclaw/"+f, filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	cfgPath := in.Env("OPENCLAW_CONFIG_PATH")
	if cfgPath == "" {
		cfgPath = filepath.Join(in.Home, ".openclaw", "openclaw.json")
	}
	doc := map[string]any{}
	old, err := os.ReadFile(cfgPath)
	if err == nil && len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &doc); err != nil {
			return nil, fmt.Errorf("install: %s is not plain JSON (%v); register the plugin by hand (see docs/HARNESSES.md)", cfgPath, err)
		}
	} else if remove {
		return out, nil
	}
	pl, _ := doc["plugins"].(map[string]any)
	if pl == nil {
		pl = map[string]any{}
	}
	load, _ := pl["load"].(map[string]any)
	if load == nil {
		load = map[string]any{}
	}
	paths := withoutString(load["paths"], dir)
	// An allowlist means only the plugins it names load: one is never
	// added where there was none (that would switch off the user's other
	// plugins), and memvault joins one that is there.
	_, hadAllow := pl["allow"].([]any)
	allow := withoutString(pl["allow"], "memvault")
	entries, _ := pl["entries"].(map[string]any)
	if entries == nil {
		entries = map[string]any{}
	}
	delete(entries, "memvault")
	if !remove {
		paths = append(paths, dir)
		if hadAllow {
			allow = append(allow, "memvault")
		}
		entries["memvault"] = map[string]any{"enabled": true, "hooks": map[string]any{"allowConversationAccess": true}}
	}
	setOrDelete(load, "paths", paths)
	setOrDelete(pl, "allow", allow)
	if len(entries) > 0 {
		pl["entries"] = entries
	} else {
		delete(pl, "entries")
	}
	if len(load) > 0 {
		pl["load"] = load
	} else {
		delete(pl, "load")
	}
	if len(pl) > 0 {
		doc["plugins"] = pl
	} else {
		delete(doc, "plugins")
	}
	data, _ := json.MarshalIndent(doc, "", "  ")
	data = append(data, '\n')
	if jsonEqual(old, data) {
		return append(out, Change{Path: cfgPath, Action: "unchanged"}), nil
	}
	return append(out, Change{Path: cfgPath, Action: "write", Content: data}), nil
}

func withoutString(v any, s string) []any {
	list, _ := v.([]any)
	var out []any
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func setOrDelete(m map[string]any, k string, list []any) {
	if len(list) > 0 {
		m[k] = list
	} else {
		delete(m, k)
	}
}

// Apply carries out planned changes. Whole files are replaced atomically,
// and a file that exists keeps its mode: the harness's configuration is the
// user's, who may have made it private.
func Apply(changes []Change) error {
	for _, c := range changes {
		switch c.Action {
		case "write":
			if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
				return err
			}
			if err := fileio.WriteKeepMode(c.Path, c.Content, 0o644); err != nil {
				return err
			}
		case "remove":
			if err := os.Remove(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			if dir := filepath.Dir(c.Path); filepath.Base(dir) == "memvault" {
				os.Remove(dir) // the OpenClaw plugin folder, once empty
			}
		}
	}
	return nil
}
