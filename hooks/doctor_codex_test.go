package hooks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDoctorCodexHashIsCodexs holds codexHookHash to the hashes Codex
// 0.169.0 itself reported (app-server hooks/list, currentHash) for
// handlers of every shape that changes the hash: no timeout (600), a
// SessionEnd timeout over 3 (clamped) and one within it, a matcher, async,
// a statusMessage, and a command with quotes, non-ASCII, HTML characters,
// U+2028 and a tab (escaped as serde_json does, not as encoding/json).
func TestDoctorCodexHashIsCodexs(t *testing.T) {
	str := func(s string) *string { return &s }
	num := func(f float64) *float64 { return &f }
	yes := true
	for _, c := range []struct {
		event   string
		matcher *string
		h       codexHandler
		want    string
	}{
		{"SessionStart", nil, codexHandler{Type: "command", Command: "memvault hook codex session-start"},
			"sha256:3d76f0ba002aba4d349b33a43b5cd5e9c58924492cd1a93cbaaf640e09f3bd3b"},
		{"SessionEnd", nil, codexHandler{Type: "command", Command: "memvault hook codex session-end", Timeout: num(3)},
			"sha256:83e579a28e3e0d1884ecc4e4e1baeec9edb3799611189edff8c26466e5246a8e"},
		{"SessionEnd", nil, codexHandler{Type: "command", Command: "memvault hook codex session-end", Timeout: num(10)},
			"sha256:83e579a28e3e0d1884ecc4e4e1baeec9edb3799611189edff8c26466e5246a8e"},
		{"SessionStart", str("startup|resume"), codexHandler{Type: "command", Command: "memvault hook codex session-start"},
			"sha256:a5f7937a16f0a1f0f93a62aae56467ebeff8e9d16e9a74feb81692cd65fc08d7"},
		{"UserPromptSubmit", nil, codexHandler{Type: "command", Command: "memvault hook codex prompt-submit", Async: &yes},
			"sha256:b9c11ebc0cf8c90830665b5477de999c99e75ea7fcbb9f8e6b2fba29dade78bb"},
		{"UserPromptSubmit", nil, codexHandler{Type: "command", Command: "other"},
			"sha256:ea901db22b37a2f1bc93bd2726a68387f0406913576bdd5402b8f4c28d5f3857"},
		{"Stop", nil, codexHandler{Type: "command", Command: "echo \"q\" 'é' <&> \u2028 tab\there", Timeout: num(5), StatusMessage: str("saving memory")},
			"sha256:1be2fe83885b3de7a21d95c908e9d6c962adb70f58006052654d5c0eae1ed337"},
		// fixtures/hooks/README.md, "Persistent trust": the capture's command
		{"SessionStart", nil, codexHandler{Type: "command", Command: "/tmp/hk/capture/hook.sh codex SessionStart /tmp/hk/runs/codex/hooks/$SCEN"},
			"sha256:d21e75d5e0dc030535662d7083f14f405db1e477bf034a373f38d12f3fd1f0e9"},
	} {
		if got := codexHookHash(c.event, c.matcher, c.h); got != c.want {
			t.Errorf("%s %q: hash %s, Codex says %s", c.event, c.h.Command, got, c.want)
		}
	}
}

// codexRig is a project with memvault's Codex hooks installed at project
// scope and a Codex home whose config.toml is written as Codex writes it.
type codexRig struct {
	in     *Installer
	config string // $CODEX_HOME/config.toml
	hooks  string // the project's .codex/hooks.json
	// config.toml's parts: settings and projects, then the hooks' trust,
	// which Codex replaces when the hooks are trusted again
	settings, hookState string
}

func newCodexRig(t *testing.T) *codexRig {
	t.Helper()
	dir := t.TempDir()
	home, proj := filepath.Join(dir, "home"), filepath.Join(dir, "proj")
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "memvault")
	// project-scope hooks run memvault from PATH: this one
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &codexRig{config: filepath.Join(codexHome, "config.toml"), hooks: filepath.Join(proj, ".codex", "hooks.json")}
	r.in = &Installer{Harness: "codex", Scope: ScopeProject, Project: proj, Home: home, Bin: bin,
		Env: func(k string) string {
			if k == "CODEX_HOME" {
				return codexHome
			}
			return ""
		}}
	r.install(t)
	// a config.toml as Codex keeps it: settings, then its own tables
	r.settings = "model = \"gpt-5\"\n\n[features]\nplugins = false\n"
	r.write(t, r.settings)
	return r
}

func (r *codexRig) install(t *testing.T) {
	t.Helper()
	cs, err := r.in.Plan(false)
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(cs); err != nil {
		t.Fatal(err)
	}
}

func (r *codexRig) write(t *testing.T, s string) {
	t.Helper()
	if err := os.WriteFile(r.config, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (r *codexRig) add(t *testing.T, s string) {
	t.Helper()
	r.settings += s
	r.write(t, r.settings+r.hookState)
}

// trustProject records the project's trust as Codex's trust prompt does.
func (r *codexRig) trustProject(t *testing.T, level string) {
	r.add(t, fmt.Sprintf("\n[projects.%q]\ntrust_level = %q\n", r.in.Project, level))
}

// trustHooks records the trust of every hook in hooks.json as Codex's
// /hooks review does, with the hashes Codex computes.
func (r *codexRig) trustHooks(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(r.hooks)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := CodexHooks(r.hooks, data)
	if err != nil || len(hs) != 6 {
		t.Fatalf("memvault's hooks in %s: %v %v", r.hooks, hs, err)
	}
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "\n[hooks.state.%q]\ntrusted_hash = %q\n", h.Key, h.Hash)
	}
	r.hookState = b.String()
	r.write(t, r.settings+r.hookState)
}

func (r *codexRig) problems(t *testing.T) []string {
	t.Helper()
	w := r.in.Doctor()
	if !w.Installed() || len(w.Wired) != 6 {
		t.Fatalf("doctor does not see the install: %+v", w)
	}
	var out []string
	for _, p := range w.Problems {
		if p.Fix == "" || p.Severity == "" {
			t.Errorf("a problem without its fix or severity: %+v", p)
		}
		out = append(out, p.Problem+" => "+p.Fix)
	}
	return out
}

func wantProblems(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d, matching %q", strings.Join(got, "\n"), len(want), want)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("problem %d:\n%s\nwant it to contain %q", i, got[i], w)
		}
	}
}

// TestDoctorCodexTrust walks the trust a project's hooks need, as Codex's
// config.toml records it: nothing trusted, the project only, both, a
// reinstall that changed the command (the stored hashes go stale), a
// parent folder's or a subfolder's trust (which Codex does not count), an
// explicit "untrusted", a hook switched off, and a config.toml that does
// not parse.
func TestDoctorCodexTrust(t *testing.T) {
	r := newCodexRig(t)
	wantProblems(t, r.problems(t),
		"the project "+r.in.Project+" is not trusted in Codex ("+r.config+")",
		"all 6 of memvault's hooks are not trusted in Codex")
	if got := r.problems(t)[0]; !strings.Contains(got, `[projects."`+r.in.Project+`"] trust_level = "trusted"`) {
		t.Errorf("the fix does not give the config.toml lines: %s", got)
	}

	// a parent's trust and a subfolder's do not count
	r.add(t, fmt.Sprintf("\n[projects.%q]\ntrust_level = \"trusted\"\n\n[projects.%q]\ntrust_level = \"trusted\"\n",
		filepath.Dir(r.in.Project), filepath.Join(r.in.Project, "sub")))
	wantProblems(t, r.problems(t), "is not trusted in Codex", "all 6 of memvault's hooks are not trusted")

	r.trustProject(t, "trusted")
	wantProblems(t, r.problems(t), "all 6 of memvault's hooks are not trusted in Codex, which skips them: post_compact, pre_compact, session_end, session_start, stop, user_prompt_submit => start codex, open /hooks")

	r.trustHooks(t)
	wantProblems(t, r.problems(t))

	// a reinstall with another binary at project scope writes the same
	// portable commands: the trust holds
	other := filepath.Join(filepath.Dir(r.in.Bin), "bin2", "memvault")
	os.MkdirAll(filepath.Dir(other), 0o755)
	os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755)
	bin := r.in.Bin
	r.in.Bin = other
	r.install(t)
	wantProblems(t, r.problems(t), "the hooks run "+bin+", not this memvault ("+other+")",
		"the MCP server runs "+bin+", not this memvault ("+other+")")
	r.in.Bin = bin

	// hooks an older memvault installed with its absolute path, trusted;
	// the reinstall that makes them portable changes every command
	data, _ := os.ReadFile(r.hooks)
	old := regexp.MustCompile(`command -v memvault >/dev/null 2>&1 && memvault hook codex ([a-z-]+) \|\| true`).
		ReplaceAllString(string(data), bin+" hook codex $1")
	if old == string(data) {
		t.Fatalf("no portable command to turn into an old one in %s", data)
	}
	os.WriteFile(r.hooks, []byte(old), 0o644)
	r.trustHooks(t)
	wantProblems(t, r.problems(t))
	r.install(t)
	wantProblems(t, r.problems(t), "all 6 of memvault's hooks are out of date in Codex")
	r.trustHooks(t) // trusted again in /hooks: Codex replaces the hashes
	wantProblems(t, r.problems(t))

	// one hook switched off in /hooks
	data, _ = os.ReadFile(r.config)
	key := fmt.Sprintf("[hooks.state.%q]", r.hooks+":stop:0:0")
	r.write(t, strings.Replace(string(data), key+"\n", key+"\nenabled = false\n", 1))
	wantProblems(t, r.problems(t), "memvault's 6 hooks is switched off in Codex (enabled = false in "+r.config+"): stop")
}

func TestDoctorCodexUntrustedAndUnreadable(t *testing.T) {
	r := newCodexRig(t)
	r.trustProject(t, "untrusted")
	r.trustHooks(t)
	wantProblems(t, r.problems(t), "Codex marks the project "+r.in.Project+" untrusted")

	r.write(t, "model = \n")
	wantProblems(t, r.problems(t), "cannot read Codex's trust from "+r.config)
}

// TestDoctorCodexUserScope: hooks in $CODEX_HOME/hooks.json need the
// hooks' trust and no project's.
func TestDoctorCodexUserScope(t *testing.T) {
	r := newCodexRig(t)
	r.in.Scope = ScopeUser
	r.hooks = filepath.Join(filepath.Dir(r.config), "hooks.json")
	r.install(t)
	wantProblems(t, r.problems(t), "all 6 of memvault's hooks are not trusted")
	r.trustHooks(t)
	wantProblems(t, r.problems(t))
}

// TestDoctorCodexKeysAreCodexs: the keys of memvault's hooks name the
// file, the event in snake case, and the group and handler indexes, as
// Codex's hooks/list does; another tool's hook is not memvault's.
func TestDoctorCodexKeysAreCodexs(t *testing.T) {
	doc := map[string]any{"hooks": map[string]any{
		"UserPromptSubmit": []any{map[string]any{"hooks": []any{
			map[string]any{"type": "command", "command": "other"},
			map[string]any{"type": "command", "command": "memvault hook codex prompt-submit"},
		}}},
		"PostCompact": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "x"}}},
			map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "/b/memvault hook codex compaction-complete"}}}},
	}}
	data, _ := json.Marshal(doc)
	hs, err := CodexHooks("/p/.codex/hooks.json", data)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, h := range hs {
		keys = append(keys, h.Key)
	}
	want := "/p/.codex/hooks.json:post_compact:1:0 /p/.codex/hooks.json:user_prompt_submit:0:1"
	if strings.Join(keys, " ") != want {
		t.Fatalf("keys %q, want %q", keys, want)
	}
}
