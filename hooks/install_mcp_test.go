package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/memvault/memvault/vault/configedit"
)

// mcpOriginals are MCP configs as people have them, per syntax: comments,
// CRLF, tabs, a byte-order mark, no final newline, other MCP servers, an
// empty list of servers. Install then uninstall must give each back byte
// for byte.
var mcpOriginals = map[string]map[string]string{
	"json": {
		"other servers, comments": `// the team's servers
{
  "mcpServers": {
    "docs": {"command": "npx", "args": ["-y", "docs-mcp"]}, // docs
    /* github */ "gh": {"type": "http", "url": "https://example.com/mcp"}
  },
  "mcp": {"other": {"type": "local", "command": ["x"]}},
}
`,
		"tabs, crlf":   "{\r\n\t\"theme\": \"dark\"\r\n}\r\n",
		"one line":     `{"theme":"dark","mcpServers":{"a":{"command":"a"}}}`,
		"bom":          "\xEF\xBB\xBF{\n    \"env\": {\"A\": \"1\"}\n}\n",
		"empty object": "{}\n",
	},
	"json5": {
		"bare keys": `// OpenClaw
{
  gateway: {port: 0x4945},
  mcp: {
    servers: {
      docs: {command: 'npx', args: ['docs-mcp'],},
    },
  },
}
`,
		"crlf": "{\r\n  plugins: {entries: {other: {enabled: true}}},\r\n}\r\n",
	},
	"toml": {
		"other servers, comments": `# Codex
model = "gpt-5" # the model

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]

[projects."/w/p"]
trust_level = "trusted"
`,
		"crlf":       "model = \"o3\"\r\n\r\n[features]\r\nplugins = false\r\n",
		"no newline": `model = "o3"`,
	},
}

// mcpFile is where the test puts the harness's MCP config, and in which
// syntax.
func mcpFile(in *Installer) (string, string) {
	switch t := in.mcpTarget(); {
	case t.TOML:
		return t.Path, "toml"
	case t.Dialect == configedit.JSON5:
		return t.Path, "json5"
	default:
		return t.Path, "json"
	}
}

// mcpEntryIn decodes the harness's MCP config and returns memvault's entry.
func mcpEntryIn(t *testing.T, in *Installer) any {
	t.Helper()
	tg := in.mcpTarget()
	data, err := os.ReadFile(tg.Path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := readMCPConfig(data, tg)
	if err != nil {
		t.Fatalf("%s: %v\n%s", tg.Path, err, data)
	}
	var v any = doc
	for _, k := range append(append([]any{}, tg.Servers...), mcpName) {
		m, _ := v.(map[string]any)
		v = m[k.(string)]
	}
	return v
}

func TestMCPRoundTripEveryHarness(t *testing.T) {
	for _, harness := range Names() {
		for _, scope := range []Scope{ScopeProject, ScopeUser} {
			in := newTestInstaller(t, harness, scope)
			_, syntax := mcpFile(in)
			for name, original := range mcpOriginals[syntax] {
				t.Run(harness+"/"+string(scope)+"/"+name, func(t *testing.T) {
					in := newTestInstaller(t, harness, scope)
					path, _ := mcpFile(in)
					os.MkdirAll(filepath.Dir(path), 0o755)
					if err := os.WriteFile(path, []byte(original), 0o600); err != nil {
						t.Fatal(err)
					}
					apply(t, in, false)
					data, _ := os.ReadFile(path)
					entry := mcpEntryIn(t, in)
					if !in.mcpOurs(entry) {
						t.Fatalf("no memvault server in %s:\n%s", path, data)
					}
					if argv := in.mcpArgv(entry); !reflect.DeepEqual(argv, []string{in.mcpCommand(), "mcp", "--harness", in.Harness}) {
						t.Errorf("the server runs %q, want %q mcp --harness %s", argv, in.mcpCommand(), in.Harness)
					}
					if strings.Contains(original, "\r\n") && bytes.Count(data, []byte("\n")) != bytes.Count(data, []byte("\r\n")) {
						t.Errorf("mixed line endings:\n%q", data)
					}
					if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
						t.Errorf("mode %v, want 0600", info.Mode().Perm())
					}
					for _, c := range plan(t, in, false) {
						if c.Action != "unchanged" {
							t.Errorf("second install: %s %s", c.Action, c.Path)
						}
					}
					apply(t, in, true)
					back, err := os.ReadFile(path)
					if err != nil || string(back) != original {
						t.Fatalf("round trip: want\n%q\ngot\n%q (%v)\ninstalled:\n%s", original, back, err, data)
					}
				})
			}
		}
	}
}

// With no MCP config at all, install creates one holding memvault's
// server alone, and uninstall removes it again (with the folder made for
// it); the person's other files stay.
func TestMCPNoFileRoundTrip(t *testing.T) {
	for _, harness := range []string{"claude-code", "codex", "opencode"} {
		for _, scope := range []Scope{ScopeProject, ScopeUser} {
			in := newTestInstaller(t, harness, scope)
			in.NoMCP = false
			path, _ := mcpFile(in)
			apply(t, in, false)
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("%s %s: install made no %s", harness, scope, path)
			}
			apply(t, in, true)
			if _, err := os.Lstat(path); err == nil {
				t.Errorf("%s %s: uninstall left %s", harness, scope, path)
			}
			if scope == ScopeProject {
				if _, err := os.Stat(filepath.Join(in.Project, ".codex")); err == nil {
					t.Errorf("%s: .codex left behind", harness)
				}
			}
		}
	}
}

// --no-mcp touches no MCP config: none is made, and one memvault's
// server is in stays as it is on uninstall.
func TestNoMCP(t *testing.T) {
	for _, harness := range Names() {
		in := newTestInstaller(t, harness, ScopeProject)
		in.NoMCP = true
		path, _ := mcpFile(in)
		for _, c := range apply(t, in, false) {
			if c.Path == path && harness != "gemini" && harness != "openclaw" {
				t.Errorf("%s: --no-mcp planned %s", harness, path)
			}
		}
		if data, err := os.ReadFile(path); err == nil && bytes.Contains(data, []byte(`"mcp"`)) {
			t.Errorf("%s: --no-mcp registered the server:\n%s", harness, data)
		}
		apply(t, in, true)

		in.NoMCP = false
		apply(t, in, false)
		in.NoMCP = true
		apply(t, in, true)
		if !in.mcpOurs(mcpEntryIn(t, in)) {
			t.Errorf("%s: uninstall --no-mcp removed the MCP server", harness)
		}
	}
}

// A server named memvault that is not memvault's (another command, or
// memvault with other arguments) is the user's: install and uninstall
// leave its bytes alone and say so.
func TestMCPForeignEntryLeftAlone(t *testing.T) {
	foreign := map[string]string{
		"claude-code": `{"mcpServers": {"memvault": {"command": "docker", "args": ["run", "memvault-img"]}}}`,
		"gemini":      `{"mcpServers": {"memvault": {"command": "memvault", "args": ["mcp", "--agent", "alice"]}}}`,
		"opencode":    `{"mcp": {"memvault": {"type": "remote", "url": "https://example.com/mcp"}}}`,
		"openclaw":    `{mcp: {servers: {memvault: {command: 'memvault-server'}}}}`,
		"codex":       "[mcp_servers.memvault]\ncommand = \"uvx\"\nargs = [\"memvault-mcp\"]\n",
	}
	for harness, src := range foreign {
		in := newTestInstaller(t, harness, ScopeUser)
		path, _ := mcpFile(in)
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte(src), 0o644)
		var warned bool
		for _, c := range apply(t, in, false) {
			warned = warned || strings.Contains(c.Warning, "not memvault's") && strings.Contains(c.Warning, path)
		}
		if !warned {
			t.Errorf("%s: install said nothing of the user's memvault server", harness)
		}
		if in.mcpOurs(mcpEntryIn(t, in)) {
			t.Errorf("%s: the user's server was taken for memvault's", harness)
		}
		apply(t, in, true)
		if data, _ := os.ReadFile(path); string(data) != src && harness != "gemini" && harness != "openclaw" {
			t.Errorf("%s: the user's server changed:\n%s", harness, data)
		}
		if !reflect.DeepEqual(in.mcpArgv(mcpEntryIn(t, in)), in.mcpArgv(decodeEntry(t, harness, src))) {
			t.Errorf("%s: the user's server changed", harness)
		}
		w := in.Doctor()
		if w.MCP == nil || !w.MCP.Registered || w.MCP.Ours {
			t.Errorf("%s: doctor: %+v", harness, w.MCP)
		}
	}
}

func decodeEntry(t *testing.T, harness, src string) any {
	in := &Installer{Harness: harness, Env: func(string) string { return "" }}
	tg := in.mcpTarget()
	doc, err := readMCPConfig([]byte(src), tg)
	if err != nil {
		t.Fatal(err)
	}
	var v any = doc
	for _, k := range append(append([]any{}, tg.Servers...), mcpName) {
		m, _ := v.(map[string]any)
		v = m[k.(string)]
	}
	return v
}

// A reinstall with another binary changes only the entry's command: the
// fields the user added (env, a timeout) stay, and so does the rest.
func TestMCPReinstallUpdatesCommandOnly(t *testing.T) {
	old := map[string]string{
		"claude-code": `{"numStartups": 3, "mcpServers": {"memvault": {"type": "stdio", "command": "/old/memvault", "args": ["mcp"], "env": {"MEMVAULT_AGENT": "cc"}}}}`,
		"opencode":    `{"mcp": {"memvault": {"type": "local", "command": ["/old/memvault", "mcp"], "timeout": 9000}}}`,
		"codex":       "[mcp_servers.memvault]\ncommand = \"/old/memvault\" # pinned\nargs = [\"mcp\"]\nstartup_timeout_sec = 20\n",
	}
	for harness, src := range old {
		in := newTestInstaller(t, harness, ScopeUser)
		path, _ := mcpFile(in)
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte(src), 0o644)
		apply(t, in, false)
		data, _ := os.ReadFile(path)
		if bytes.Contains(data, []byte("/old/memvault")) || !bytes.Contains(data, []byte("it's/mv")) {
			t.Errorf("%s: the command was not updated:\n%s", harness, data)
		}
		want := strings.Replace(src, `"/old/memvault"`, quoteFor(harness, in.Bin), 1)
		if string(data) != want {
			t.Errorf("%s: reinstall changed more than the command:\ngot  %s\nwant %s", harness, data, want)
		}
	}
}

func quoteFor(harness, s string) string {
	if harness == "codex" {
		var b bytes.Buffer
		toml.NewEncoder(&b).Encode(map[string]string{"k": s})
		return strings.TrimSpace(strings.TrimPrefix(b.String(), "k = "))
	}
	q, _ := json.Marshal(s)
	return string(q)
}

// OpenCode's server goes into the config the project already has, the
// way `opencode mcp add` picks it; OpenClaw's names the project's folder at
// project scope, where the plugin finds the project.
func TestMCPTargetFollowsTheHarness(t *testing.T) {
	in := newTestInstaller(t, "opencode", ScopeProject)
	os.MkdirAll(filepath.Join(in.Project, ".opencode"), 0o755)
	jsonc := filepath.Join(in.Project, ".opencode", "opencode.jsonc")
	os.WriteFile(jsonc, []byte("{\n  // mine\n  \"model\": \"x/y\",\n}\n"), 0o644)
	if got := in.mcpTarget().Path; got != jsonc {
		t.Errorf("opencode: %s, want %s", got, jsonc)
	}
	apply(t, in, false)
	if data, _ := os.ReadFile(jsonc); !bytes.Contains(data, []byte("// mine")) || !bytes.Contains(data, []byte(`"memvault"`)) {
		t.Errorf("opencode.jsonc:\n%s", data)
	}
	if _, err := os.Stat(filepath.Join(in.Project, "opencode.json")); err == nil {
		t.Error("a second opencode.json was made")
	}

	oc := newTestInstaller(t, "openclaw", ScopeProject)
	apply(t, oc, false)
	m, _ := mcpEntryIn(t, oc).(map[string]any)
	if m["cwd"] != oc.Project || m["command"] != "memvault" {
		t.Errorf("openclaw at project scope: %v", m)
	}
	// a second project's install moves it there; uninstall from the
	// first takes it out all the same (one OpenClaw config, one server)
	other := *oc
	other.Project = t.TempDir()
	apply(t, &other, false)
	if m, _ := mcpEntryIn(t, oc).(map[string]any); m["cwd"] != other.Project {
		t.Errorf("second project: %v", m)
	}
}

// Doctor reports the server of an installed harness: registered or not,
// and what stops the harness from starting it.
func TestDoctorMCP(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "memvault")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	newIn := func(harness string) *Installer {
		in := newTestInstaller(t, harness, ScopeUser)
		in.Bin = bin
		return in
	}
	problems := func(w Wiring) string {
		var b strings.Builder
		for _, p := range w.Problems {
			if strings.Contains(p.Problem, "MCP") { // the hooks' own (Codex's trust) are doctor_test's
				b.WriteString(p.Severity + ": " + p.Problem + "\n")
			}
		}
		return b.String()
	}
	for _, harness := range Names() {
		in := newIn(harness)
		if w := in.Doctor(); w.MCP == nil || w.MCP.Registered || len(w.Problems) > 0 {
			t.Errorf("%s: nothing installed: %+v %s", harness, w.MCP, problems(w))
		}
		apply(t, in, false)
		w := in.Doctor()
		if !w.MCP.Registered || !w.MCP.Ours || !w.MCP.SameBin || !w.MCP.Enabled || w.MCP.Binary != bin || problems(w) != "" {
			t.Errorf("%s: installed: %+v\n%s", harness, w.MCP, problems(w))
		}

		// installed with --no-mcp: not registered, and no problem
		in2 := newIn(harness)
		in2.NoMCP = true
		apply(t, in2, false)
		if w := in2.Doctor(); w.MCP.Registered || problems(w) != "" {
			t.Errorf("%s: --no-mcp: %+v %s", harness, w.MCP, problems(w))
		}
	}

	// the binary gone, or not executable
	in := newIn("claude-code")
	apply(t, in, false)
	os.Chmod(bin, 0o644)
	if got := problems(in.Doctor()); !strings.Contains(got, "error: the MCP server runs "+bin+", which is not executable") {
		t.Errorf("not executable: %s", got)
	}
	os.Remove(bin)
	if got := problems(in.Doctor()); !strings.Contains(got, "error: the MCP server runs "+bin+", which does not exist") {
		t.Errorf("gone: %s", got)
	}
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)

	// switched off
	cx := newIn("codex")
	apply(t, cx, false)
	cfg := cx.mcpTarget().Path
	data, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, bytes.Replace(data, []byte("args = [\"mcp\", \"--harness\", \"codex\"]"), []byte("args = [\"mcp\", \"--harness\", \"codex\"]\nenabled = false"), 1), 0o644)
	if got := problems(cx.Doctor()); !strings.Contains(got, "error: memvault's MCP server is switched off in "+cfg) {
		t.Errorf("switched off: %s", got)
	}

	// another server under the name: a warning
	gm := newIn("gemini")
	apply(t, gm, false)
	path := gm.configPath()
	data, _ = os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(data, []byte(`"command": "`+bin+`"`), []byte(`"command": "docker"`), 1), 0o644)
	if got := problems(gm.Doctor()); !strings.Contains(got, "warning: the MCP server named memvault in "+path+" is not memvault's (it runs docker mcp --harness gemini)") {
		t.Errorf("foreign: %s", got)
	}

	// a project's server the person turned down in Claude Code
	cc := newTestInstaller(t, "claude-code", ScopeProject)
	cc.Bin = bin
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	apply(t, cc, false)
	if got := problems(cc.Doctor()); got != "" {
		t.Errorf("project scope: %s", got)
	}
	global, _ := json.Marshal(map[string]any{"projects": map[string]any{cc.Project: map[string]any{"disabledMcpjsonServers": []string{"memvault"}}}})
	os.WriteFile(filepath.Join(cc.Home, ".claude.json"), global, 0o600)
	if got := problems(cc.Doctor()); !strings.Contains(got, "error: Claude Code was told not to start the project's MCP server memvault") {
		t.Errorf("rejected: %s", got)
	}

	// a file that does not parse
	os.WriteFile(cc.mcpTarget().Path, []byte("{"), 0o644)
	if got := problems(cc.Doctor()); !strings.Contains(got, "error: cannot read the MCP servers in "+cc.mcpTarget().Path) {
		t.Errorf("unparsable: %s", got)
	}
}

// docs/MCP.md shows the entry of each harness for people who wire it by
// hand: it must be what install writes.
func TestMCPSnippetsMatchInstall(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "MCP.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, harness := range Names() {
		in := newTestInstaller(t, harness, ScopeUser)
		in.Bin = "/usr/local/bin/memvault"
		marker := "<!-- mcp snippet: " + harness + " -->\n```"
		i := bytes.Index(doc, []byte(marker))
		if i < 0 {
			t.Errorf("%s: no snippet in docs/MCP.md", harness)
			continue
		}
		block := doc[i+len(marker):]
		block = block[bytes.IndexByte(block, '\n')+1:]
		block = block[:bytes.Index(block, []byte("```"))]
		tg := in.mcpTarget()
		got, err := readMCPConfig(block, tg)
		if err != nil {
			t.Fatalf("%s: snippet: %v", harness, err)
		}
		apply(t, in, false)
		data, _ := os.ReadFile(tg.Path)
		want, err := readMCPConfig(data, tg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(at(got, tg.Servers), at(want, tg.Servers)) {
			t.Errorf("%s: docs/MCP.md's snippet is not what install writes:\n%s", harness, data)
		}
	}
}

func at(doc map[string]any, path []any) any {
	var v any = doc
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k.(string)]
	}
	return v
}

// TestMCPEntryNamesItsHarness: install tells the server its harness; an
// entry an earlier install wrote (mcp alone) is still memvault's, so
// uninstall takes it out, while one that names another harness is not.
func TestMCPEntryNamesItsHarness(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ours bool
	}{
		{[]string{"mcp"}, true},
		{[]string{"mcp", "--harness", "claude-code"}, true},
		{[]string{"mcp", "--harness", "codex"}, false},
		{[]string{"mcp", "--harness"}, false},
		{[]string{"mcp", "--agent", "alice"}, false},
	} {
		in := newTestInstaller(t, "claude-code", ScopeProject)
		entry := map[string]any{"type": "stdio", "command": "memvault", "args": []any{}}
		for _, a := range tc.args {
			entry["args"] = append(entry["args"].([]any), a)
		}
		if got := in.mcpOurs(entry); got != tc.ours {
			t.Errorf("%q: ours %v, want %v", tc.args, got, tc.ours)
		}
		if !tc.ours {
			continue
		}
		data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"memvault": entry}})
		path := in.mcpTarget().Path
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		apply(t, in, true)
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%q: uninstall left %s", tc.args, path)
		}
	}
}
