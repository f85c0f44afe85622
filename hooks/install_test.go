package hooks

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func newTestInstaller(t *testing.T, harness string, scope Scope) *Installer {
	t.Helper()
	home, proj := t.TempDir(), t.TempDir()
	cfg := filepath.Join(home, ".openclaw", "openclaw.json")
	return &Installer{Harness: harness, Scope: scope, Project: proj, Home: home, Bin: "/opt/memvault bin/it's/mv",
		Env: func(k string) string {
			if k == "OPENCLAW_CONFIG_PATH" {
				return cfg
			}
			return ""
		}}
}

func plan(t *testing.T, in *Installer, remove bool) []Change {
	t.Helper()
	cs, err := in.Plan(remove)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func apply(t *testing.T, in *Installer, remove bool) []Change {
	t.Helper()
	cs := plan(t, in, remove)
	if err := Apply(cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// originals are settings files as people have them: other tools' hooks,
// comments, every layout. Install then uninstall must give each back byte
// for byte.
var originals = map[string]string{
	"empty object": "{}\n",
	"other hooks, comments": `// project settings
{
  "model": "opus", // the big one
  /* hooks of other tools */
  "hooks": {
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send 'done' && echo ok > /tmp/x.log"}]},
    ],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
    ]
  },
  "url": "https://example.com//path", // not a comment: in a string
}
`,
	"one line":   `{"model":"opus","hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo /* x */"}]}]}}`,
	"tabs, crlf": "{\r\n\t\"model\": \"opus\",\r\n\t\"hooks\": {}\r\n}\r\n",
	"bom":        "\xEF\xBB\xBF{\n    \"env\": {\"A\": \"1\"}\n}\n",
}

func TestInstallRoundTripEveryHarness(t *testing.T) {
	for _, harness := range []string{"claude-code", "codex", "gemini"} {
		for _, scope := range []Scope{ScopeProject, ScopeUser} {
			for name, original := range originals {
				if name == "tabs, crlf" {
					original = strings.Replace(original, "\t\"hooks\": {}", "\t\"hooks\": {\"X\": []}", 1)
				}
				t.Run(harness+"/"+string(scope)+"/"+name, func(t *testing.T) {
					in := newTestInstaller(t, harness, scope)
					path := in.configPath()
					os.MkdirAll(filepath.Dir(path), 0o755)
					if err := os.WriteFile(path, []byte(original), 0o600); err != nil {
						t.Fatal(err)
					}
					apply(t, in, false)
					data, _ := os.ReadFile(path)
					for _, pair := range hookEvents[harness] {
						if !bytes.Contains(data, []byte(strings.ReplaceAll(in.command(pair[1]), `\`, `\\`))) {
							t.Fatalf("no %s hook:\n%s", pair[1], data)
						}
					}
					if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
						t.Errorf("mode %v, want 0600", info.Mode().Perm())
					}
					if cs := plan(t, in, false); cs[0].Action != "unchanged" {
						t.Errorf("second install: %s", cs[0].Action)
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

// A file that was not there is removed again, with the folder install
// made for it (at project scope); one the user had is left.
func TestInstallRoundTripNoFile(t *testing.T) {
	for _, harness := range Names() {
		in := newTestInstaller(t, harness, ScopeProject)
		apply(t, in, false)
		apply(t, in, true)
		var left []string
		for _, dir := range []string{in.Project, in.Home} {
			filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
				if err == nil && p != dir {
					left = append(left, p)
				}
				return nil
			})
		}
		if len(left) > 0 {
			t.Errorf("%s: install then uninstall left %v", harness, left)
		}
	}
}

// A reinstall changes only memvault's command: the fields the user added
// to its entry and group stay, an old absolute-path entry is upgraded in
// place, and a duplicate of it goes.
func TestReinstallKeepsUserFields(t *testing.T) {
	in := newTestInstaller(t, "claude-code", ScopeProject)
	path := in.configPath()
	os.MkdirAll(filepath.Dir(path), 0o755)
	original := `{
  "hooks": {
    "Stop": [
      {
        "matcher": "",
        "hooks": [
          {"type": "command", "command": "/usr/local/bin/memvault hook claude-code stop", "timeout": 5, "statusMessage": "saving"},
          {"type": "command", "command": "echo mine"}
        ]
      },
      {"hooks": [{"type": "command", "command": "'/old path/memvault' hook claude-code stop"}]}
    ]
  }
}
`
	os.WriteFile(path, []byte(original), 0o644)
	apply(t, in, false)
	data, _ := os.ReadFile(path)
	want := strings.Replace(original, `"/usr/local/bin/memvault hook claude-code stop"`, `"`+in.command("stop")+`"`, 1)
	want = strings.Replace(want, ",\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"'/old path/memvault' hook claude-code stop\"}]}", "", 1)
	if got := string(data); !strings.HasPrefix(got, want[:strings.Index(want, "    ]\n  }\n}")]) {
		t.Fatalf("reinstall:\n%s\nwant the Stop part as\n%s", got, want)
	}
	if bytes.Count(data, []byte("hook claude-code stop")) != 1 {
		t.Errorf("want one stop hook:\n%s", data)
	}
	// uninstall takes memvault's entry out of the shared group, the user's stays
	apply(t, in, true)
	data, _ = os.ReadFile(path)
	if bytes.Contains(data, []byte("hook claude-code")) || !bytes.Contains(data, []byte(`"echo mine"`)) || !bytes.Contains(data, []byte(`"matcher": ""`)) {
		t.Fatalf("uninstall:\n%s", data)
	}
}

func TestParseCommand(t *testing.T) {
	cases := []struct {
		cmd, bin, harness, event string
		ok                       bool
	}{
		{"memvault hook codex stop", "memvault", "codex", "stop", true},
		{"/usr/bin/memvault hook codex stop", "/usr/bin/memvault", "codex", "stop", true},
		{"'/a b/it'\\''s/mv' hook gemini session-end", "/a b/it's/mv", "gemini", "session-end", true},
		{"command -v memvault >/dev/null 2>&1 && memvault hook claude-code stop || true", "memvault", "claude-code", "stop", true},
		{"test -x '/a b/mv' && '/a b/mv' hook claude-code stop || true", "/a b/mv", "claude-code", "stop", true},
		// look-alikes that are not memvault's
		{"test -x /a/mv && /b/mv hook claude-code stop || true", "", "", "", false},
		{"command -v memvault >/dev/null 2>&1 && other hook claude-code stop || true", "", "", "", false},
		{"memvault hook claude-code stop; rm -rf ~", "", "", "", false},
		{"echo memvault hook claude-code stop", "", "", "", false},
		{"memvault hook claude-code stop extra", "", "", "", false},
		{"command -v memvault >/dev/null 2>&1 && memvault hook claude-code stop", "", "", "", false},
		{"", "", "", "", false},
	}
	for _, tc := range cases {
		bin, h, e, ok := parseCommand(tc.cmd)
		if ok != tc.ok || ok && (bin != tc.bin || h != tc.harness || e != tc.event) {
			t.Errorf("parseCommand(%q) = %q %q %q %v", tc.cmd, bin, h, e, ok)
		}
	}
	if isOurs("memvault hook codex stop", "claude-code") || isOurs("memvault hook claude-code bogus", "claude-code") {
		t.Errorf("isOurs took another harness's or an unknown event")
	}
	// what install writes, it recognises, in both scopes
	for _, scope := range []Scope{ScopeProject, ScopeUser} {
		in := newTestInstaller(t, "codex", scope)
		if c := in.command("stop"); !isOurs(c, "codex") {
			t.Errorf("%s: isOurs(%q) = false", scope, c)
		}
	}
}

// The hook commands run through sh -c (Claude Code, Codex and Gemini CLI
// all run a hook's command through a shell). Without memvault they exit 0
// and print nothing, so the harness is not disturbed; with it, the hook
// gets stdin and its output reaches the harness.
func TestGuardedCommandRunsOrIsSilent(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "bin", "memvault")
	os.MkdirAll(filepath.Dir(fake), 0o755)
	os.WriteFile(fake, []byte("#!/bin/sh\necho \"ran $* with $(cat)\"\nexit 3\n"), 0o755)
	for _, scope := range []Scope{ScopeProject, ScopeUser} {
		in := newTestInstaller(t, "claude-code", scope)
		for _, present := range []bool{false, true} {
			in.Bin = filepath.Join(dir, "missing", "memvault")
			path := "/usr/bin:/bin"
			if present {
				in.Bin, path = fake, filepath.Dir(fake)+":/usr/bin:/bin"
			}
			cmd := exec.Command("/bin/sh", "-c", in.command("stop"))
			cmd.Env = []string{"PATH=" + path}
			cmd.Stdin = strings.NewReader("payload")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if err != nil {
				t.Errorf("%s present=%v: exit %v (stderr %q)", scope, present, err, stderr.String())
			}
			want := ""
			if present {
				want = "ran hook claude-code stop with payload\n"
			}
			if stdout.String() != want || stderr.Len() > 0 {
				t.Errorf("%s present=%v: stdout %q stderr %q, want stdout %q", scope, present, stdout.String(), stderr.String(), want)
			}
		}
	}
}

// Project scope writes no machine path into files a team commits: not the
// binary's, not the project's.
func TestProjectScopeIsPortable(t *testing.T) {
	for _, harness := range Names() {
		in := newTestInstaller(t, harness, ScopeProject)
		for _, c := range plan(t, in, false) {
			if !strings.HasPrefix(c.Path, in.Project) {
				continue // OpenClaw's own config, in the user's home
			}
			for _, machine := range []string{in.Bin, in.Project, "/opt/"} {
				if bytes.Contains(c.Content, []byte(machine)) {
					t.Errorf("%s: %s holds %q", harness, c.Path, machine)
				}
			}
		}
		user := newTestInstaller(t, harness, ScopeUser)
		pinned := false
		for _, c := range plan(t, user, false) {
			pinned = pinned || bytes.Contains(c.Content, []byte(`/opt/memvault bin/it`))
		}
		if !pinned {
			t.Errorf("%s: user scope does not pin the binary", harness)
		}
	}
}

// A config that is not JSON (or JSONC, or JSON5 for OpenClaw) is refused
// with one line naming the file, and nothing is planned.
func TestInstallRefusesWhatItCannotRead(t *testing.T) {
	cases := map[string]string{
		"claude-code": "model = opus\n",
		"codex":       `{"hooks": []}`,
		"gemini":      `{"hooks": {"AfterAgent": {"x": 1}}}`,
		"openclaw":    `{plugins: {load: 'x'}, plugins: {}}`,
	}
	for harness, src := range cases {
		in := newTestInstaller(t, harness, ScopeProject)
		path := in.configPath()
		if harness == "openclaw" {
			path = in.Env("OPENCLAW_CONFIG_PATH")
		}
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte(src), 0o644)
		for _, remove := range []bool{false, true} {
			cs, err := in.Plan(remove)
			if err == nil || cs != nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), path) {
				t.Errorf("%s remove=%v: %v %+v", harness, remove, err, cs)
			}
		}
	}
}

// OpenClaw's JSON5 config: registered and unregistered as text, an
// allowlist joined only when there is one, and the file given back.
func TestOpenClawJSON5RoundTrip(t *testing.T) {
	originals := []string{
		"// OpenClaw\n{\n  gateway: {port: 0x4945, bind: 'loopback'},\n  plugins: {\n    allow: ['other',],\n    entries: {other: {enabled: true}},\n  },\n}\n",
		"{\n  plugins: {entries: {other: {enabled: true}}}, // no allowlist\n}\n",
		"{}",
	}
	for _, original := range originals {
		in := newTestInstaller(t, "openclaw", ScopeProject)
		cfg := in.Env("OPENCLAW_CONFIG_PATH")
		os.MkdirAll(filepath.Dir(cfg), 0o755)
		os.WriteFile(cfg, []byte(original), 0o600)
		apply(t, in, false)
		data, _ := os.ReadFile(cfg)
		hadAllow := strings.Contains(original, "allow:")
		if strings.Contains(string(data), "allow: [") != hadAllow || hadAllow && !strings.Contains(string(data), `'other', "memvault"`) {
			t.Errorf("allowlist:\n%s", data)
		}
		if !strings.Contains(string(data), filepath.Join(in.Project, ".openclaw", "plugins", "memvault")) ||
			!strings.Contains(string(data), "allowConversationAccess") {
			t.Errorf("not registered:\n%s", data)
		}
		if cs := plan(t, in, false); cs[len(cs)-1].Action != "unchanged" {
			t.Errorf("second install changed the config")
		}
		apply(t, in, true)
		back, err := os.ReadFile(cfg)
		if original == "{}" {
			if err == nil {
				t.Errorf("a config that held only memvault's registration was left: %q", back)
			}
			continue
		}
		if string(back) != original {
			t.Errorf("round trip:\nwant %q\ngot  %q\ninstalled:\n%s", original, back, data)
		}
	}
}

// A reinstall turns memvault's entry back on and keeps the user's fields.
func TestOpenClawEntryUpdatedInPlace(t *testing.T) {
	in := newTestInstaller(t, "openclaw", ScopeUser)
	in.NoMCP = true // the plugin's entry only: the MCP server's is install_mcp_test.go's
	cfg := in.Env("OPENCLAW_CONFIG_PATH")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	dir := in.configPath()
	src := "{plugins: {load: {paths: ['" + dir + "']}, entries: {memvault: {enabled: false, note: 'mine', hooks: {x: 1}}}}}"
	os.WriteFile(cfg, []byte(src), 0o644)
	apply(t, in, false)
	data, _ := os.ReadFile(cfg)
	want := "{plugins: {load: {paths: ['" + dir + "']}, entries: {memvault: {enabled: true, note: 'mine', hooks: {x: 1, allowConversationAccess: true}}}}}"
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
}

// Apply leaves a 0600 file 0600 and writes through a link to the file it
// names (a dotfiles manager's), keeping the link.
func TestApplyKeepsModeAndLinks(t *testing.T) {
	in := newTestInstaller(t, "gemini", ScopeUser)
	path := in.configPath()
	target := filepath.Join(in.Home, "dotfiles", "gemini.json")
	os.MkdirAll(filepath.Dir(target), 0o755)
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(target, []byte("{\n  // mine\n  \"theme\": \"dark\"\n}\n"), 0o600)
	os.Symlink(target, path)
	apply(t, in, false)
	if info, err := os.Lstat(path); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}
	if info, _ := os.Stat(target); info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", info.Mode().Perm())
	}
	data, _ := os.ReadFile(target)
	if !bytes.Contains(data, []byte("// mine")) || !bytes.Contains(data, []byte("hook gemini stop")) {
		t.Errorf("target:\n%s", data)
	}
	apply(t, in, true)
	if data, _ := os.ReadFile(target); string(data) != "{\n  // mine\n  \"theme\": \"dark\"\n}\n" {
		t.Errorf("round trip through the link: %q", data)
	}
}

// TestHandSnippetsMatchInstall: the blocks docs/HARNESSES.md gives people
// who wire by hand are what install writes, as JSON values.
func TestHandSnippetsMatchInstall(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "HARNESSES.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, harness := range []string{"claude-code", "codex", "gemini"} {
		marker := "<!-- snippet: " + harness + " -->\n```json\n"
		i := bytes.Index(doc, []byte(marker))
		if i < 0 {
			t.Errorf("%s: no snippet in docs/HARNESSES.md", harness)
			continue
		}
		block := doc[i+len(marker):]
		block = block[:bytes.Index(block, []byte("```"))]
		in := newTestInstaller(t, harness, ScopeProject)
		in.NoMCP = true // the hooks' snippet; the MCP server's is in docs/MCP.md (TestMCPSnippetsMatchInstall)
		var want, got any
		if err := json.Unmarshal(block, &got); err != nil {
			t.Fatalf("%s: snippet: %v", harness, err)
		}
		json.Unmarshal(plan(t, in, false)[0].Content, &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: docs/HARNESSES.md's snippet is not what install writes:\n%s", harness, plan(t, in, false)[0].Content)
		}
	}
}
