package configedit

import (
	"strings"
	"testing"
)

var mcpPath = []string{"mcp_servers", "memvault"}

var mcpFields = Obj{{"command", "/opt/mem vault/memvault"}, {"args", []any{"mcp"}}}

// tomlOriginals are config.toml files as people and Codex write them:
// comments, CRLF, no final newline, tables of every kind, strings and
// arrays that look like headers, other MCP servers.
var tomlOriginals = map[string]string{
	"missing":     "",
	"blank line":  "\n",
	"no newline":  `model = "o3"`,
	"comment end": "model = \"o3\" # the model",
	"crlf":        "model = \"o3\"\r\n\r\n[projects.\"/w/x\"]\r\ntrust_level = \"trusted\"\r\n",
	"blank at end": `model = "o3"

`,
	"other servers": `# Codex
model = "gpt-5"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]

[mcp_servers.docs.env]
TOKEN = "x"
`,
	"tricky": `title = """
[mcp_servers.memvault]
not a header"""
lit = '''
[x]'''
nested = [
  [1, 2], # [not.a.table]
  ["a]", "b"],
]
inline = { a = 1, "b.c" = [ {d = 2} ] }
when = 1979-05-27 07:32:00Z
"quoted key" = 'x'

[[fruits]]
name = "apple"

[ mcp_servers . "other" ]
command = "x"
`,
	"servers table": `[mcp_servers]
# none yet
`,
}

// Appending memvault's table and taking it out gives every file back byte
// for byte; a table added by hand after it survives.
func TestTOMLRoundTrip(t *testing.T) {
	for name, src := range tomlOriginals {
		t.Run(name, func(t *testing.T) {
			e, err := NewTOML([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if err := e.AppendTable(mcpPath, mcpFields); err != nil {
				t.Fatal(err)
			}
			added, err := e.Bytes()
			if err != nil {
				t.Fatalf("%v\n%s", err, e.src)
			}
			if !strings.HasPrefix(string(added), src) {
				t.Fatalf("the append changed what was there:\n%q", added)
			}
			if strings.Contains(src, "\r\n") && strings.Count(string(added), "\n") != strings.Count(string(added), "\r\n") {
				t.Errorf("mixed line endings: %q", added)
			}
			again, err := NewTOML(added)
			if err != nil {
				t.Fatal(err)
			}
			if got := again.Value("mcp_servers", "memvault", "command"); got != "/opt/mem vault/memvault" {
				t.Fatalf("command %v", got)
			}
			if err := again.DeleteTable(mcpPath); err != nil {
				t.Fatal(err)
			}
			back, err := again.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if string(back) != src {
				t.Fatalf("round trip:\nwant %q\ngot  %q\nvia  %q", src, back, added)
			}
			if again.Empty() != (src == "") {
				t.Errorf("Empty() = %v", again.Empty())
			}

			// Codex appends its own tables after memvault's; the user
			// adds a sub-table of memvault's: uninstall takes memvault's
			// tables and keeps Codex's, with the blank line between.
			later := string(added)
			if !strings.HasSuffix(later, "\n") {
				later += "\n"
			}
			nl := "\n"
			if strings.Contains(src, "\r\n") {
				nl = "\r\n"
			}
			later += nl + "[mcp_servers.memvault.env]" + nl + "A = \"1\"" + nl + nl + "[hooks.state.\"k\"]" + nl + "trusted_hash = \"h\"" + nl
			e3, err := NewTOML([]byte(later))
			if err != nil {
				t.Fatal(err)
			}
			if err := e3.DeleteTable(mcpPath); err != nil {
				t.Fatal(err)
			}
			got, err := e3.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(got), "memvault") && !strings.Contains(src, "memvault") {
				t.Fatalf("memvault's tables left:\n%s", got)
			}
			if !strings.Contains(string(got), nl+"[hooks.state.\"k\"]"+nl+"trusted_hash = \"h\""+nl) {
				t.Fatalf("Codex's table lost:\n%q", got)
			}
		})
	}
}

// A reinstall replaces the command's string in place: its comment, the
// keys the user added and the rest of the file stay.
func TestTOMLSetString(t *testing.T) {
	src := "[mcp_servers.memvault]\ncommand   =   '/old/memvault'  # mine\nargs = [\"mcp\"]\nenv = { A = \"1\" }\n\n[other]\nx = 1\n"
	e, err := NewTOML([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetString([]string{"mcp_servers", "memvault", "command"}, `/new "quoted"\path`); err != nil {
		t.Fatal(err)
	}
	got, err := e.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(src, `'/old/memvault'`, `"/new \"quoted\"\\path"`, 1)
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// a command written inside an inline table cannot be replaced as a
	// line: an error, nothing changed
	inline := "mcp_servers.memvault = { command = \"/old\", args = [\"mcp\"] }\n"
	e, _ = NewTOML([]byte(inline))
	if err := e.SetString([]string{"mcp_servers", "memvault", "command"}, "/new"); err == nil {
		t.Fatal("replaced a value inside an inline table")
	}
	if string(e.src) != inline {
		t.Fatal("a failed edit changed the text")
	}
}

// What memvault cannot edit is an error, never a file that means
// something else: an inline mcp_servers cannot take a table, and a
// memvault table defined twice over is refused by the decoder first.
func TestTOMLRefuses(t *testing.T) {
	for _, src := range []string{
		"mcp_servers = { docs = { command = \"x\" } }\n",
		"mcp_servers = 3\n",
	} {
		e, err := NewTOML([]byte(src))
		if err != nil {
			continue
		}
		if err := e.AppendTable(mcpPath, mcpFields); err == nil {
			if _, err := e.Bytes(); err == nil {
				t.Errorf("%q: appended a table the file cannot hold", src)
			}
		}
	}
	if _, err := NewTOML([]byte("[a]\nx = 1\n[a]\ny = 2\n")); err == nil {
		t.Error("a table defined twice was accepted")
	}
	if _, err := NewTOML([]byte("x = \n")); err == nil {
		t.Error("a key without a value was accepted")
	}
}

// Removing a dotted-key or inline definition of the server takes its
// lines out.
func TestTOMLDeleteKeyLines(t *testing.T) {
	src := "[mcp_servers]\nmemvault = { command = \"memvault\", args = [\"mcp\"] }\ndocs.command = \"x\"\n"
	e, err := NewTOML([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteTable(mcpPath); err != nil {
		t.Fatal(err)
	}
	got, err := e.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "[mcp_servers]\ndocs.command = \"x\"\n" {
		t.Fatalf("%q", got)
	}
}

// FuzzTOMLRoundTrip: whatever a config.toml holds, the editor never
// panics, and a file it accepts that has no memvault server of its own
// comes back byte for byte after memvault's table is added and removed,
// or the addition is refused.
func FuzzTOMLRoundTrip(f *testing.F) {
	for _, src := range tomlOriginals {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		e, err := NewTOML(src)
		if err != nil {
			return
		}
		if e.Value(mcpPath...) != nil {
			return
		}
		if err := e.AppendTable(mcpPath, mcpFields); err != nil {
			return
		}
		if _, err := e.Bytes(); err != nil {
			return // refused: the file's layout cannot take the table
		}
		if err := e.DeleteTable(mcpPath); err != nil {
			t.Fatalf("removing what was just added: %v\nsrc %q", err, src)
		}
		got, err := e.Bytes()
		if err != nil {
			t.Fatalf("%v\nsrc %q", err, src)
		}
		if string(got) != string(src) {
			t.Fatalf("round trip changed the file\nsrc %q\ngot %q", src, got)
		}
	})
}
