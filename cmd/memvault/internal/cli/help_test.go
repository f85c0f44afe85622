package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// runCLI runs memvault in process with args and returns the exit code and
// both streams.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// isolate keeps a test's runs of the CLI away from the person's git
// configuration, home and MEMVAULT_* environment.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", t.TempDir())
	for _, env := range []string{"MEMVAULT_DIR", "MEMVAULT_AGENT", "MEMVAULT_SESSION", "MEMVAULT_HARNESS", "MEMVAULT_THREAD"} {
		t.Setenv(env, "")
	}
}

// everyCommand walks the tree: each command's path and the command.
func everyCommand() map[string]*ucli.Command {
	out := map[string]*ucli.Command{}
	var walk func(prefix string, cs []*ucli.Command)
	walk = func(prefix string, cs []*ucli.Command) {
		for _, c := range cs {
			out[prefix+c.Name] = c
			walk(prefix+c.Name+" ", c.Subcommands)
		}
	}
	walk("", newApp(nil, io.Discard, io.Discard).Commands)
	return out
}

// TestHelpGroupsEveryCommand: every top-level command is under exactly one
// heading of the help, and every name there is a command, so a new command
// cannot be left out of `memvault help`.
func TestHelpGroupsEveryCommand(t *testing.T) {
	app := newApp(nil, io.Discard, io.Discard)
	seen := map[string]string{}
	for _, g := range commandGroups() {
		for _, name := range g.commands {
			if prev, ok := seen[name]; ok {
				t.Errorf("%s is under %q and %q", name, prev, g.title)
			}
			seen[name] = g.title
			if findCommand(app.Commands, name) == nil {
				t.Errorf("help group %q names %s, which is not a command", g.title, name)
			}
		}
	}
	for _, c := range app.Commands {
		if seen[c.Name] == "" {
			t.Errorf("memvault %s is under no heading of the help: add it to commandGroups", c.Name)
		}
	}
	_, top, _ := runCLI(t, "help")
	_, all, _ := runCLI(t, "help", "--all")
	for _, g := range commandGroups() {
		for _, name := range g.commands {
			listed := strings.Contains(top, "\n  "+name+" ")
			if listed == g.plumbing {
				t.Errorf("memvault help lists %s: %v, want %v (plumbing only with --all)", name, listed, !g.plumbing)
			}
			if !strings.Contains(all, "\n  "+name+" ") {
				t.Errorf("memvault help --all does not list %s", name)
			}
		}
	}
}

// TestHelpIsTheSameEverywhere: `memvault`, `memvault help`, `--help` and
// `-h` print one help; `memvault help CMD`, `memvault CMD --help`, `-h`
// anywhere on the line (after arguments and other flags too) print the
// command's.
func TestHelpIsTheSameEverywhere(t *testing.T) {
	_, root, _ := runCLI(t, "help")
	for _, args := range [][]string{nil, {"--help"}, {"-h"}, {"--vault", "/nowhere", "--help"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || out != root || errOut != "" {
			t.Errorf("memvault %q: exit %d, stderr %q, same help as `memvault help`: %v", args, code, errOut, out == root)
		}
	}
	_, want, _ := runCLI(t, "help", "commitment", "close")
	for _, args := range [][]string{
		{"commitment", "close", "--help"},
		{"commitment", "close", "-h"},
		{"commitment", "close", "e_x", "--note", "n", "-h"},
		{"--agent", "a", "commitment", "close", "--help", "--json"},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("memvault %q: exit %d, stderr %q, same help as `memvault help commitment close`: %v\n%s", args, code, errOut, out == want, out)
		}
	}
	// -h after a literal -- is text, not a request for help.
	if _, out, _ := runCLI(t, "remember", "--vault", t.TempDir(), "--", "-h"); out == want || strings.Contains(out, "Usage:") {
		t.Errorf("memvault remember -- -h printed help")
	}
}

// TestEveryCommandHelp walks every command: `memvault help PATH` exits 0
// and shows its usage line, every flag with its short names, the values
// of each flag or argument that takes one of a closed set, each default
// once, and the global flags the command does not shadow.
func TestEveryCommandHelp(t *testing.T) {
	values := closedValues()
	cmds := everyCommand()
	for key := range values {
		path, _, _ := strings.Cut(key, " -")
		if strings.Contains(key, " --") && cmds[path] == nil {
			t.Errorf("closedValues names %q: no command %q", key, path)
		}
	}
	for path, cmd := range cmds {
		code, out, errOut := runCLI(t, append([]string{"help"}, strings.Fields(path)...)...)
		if code != 0 || errOut != "" {
			t.Errorf("memvault help %s: exit %d, stderr %q", path, code, errOut)
			continue
		}
		if !strings.Contains(out, "Usage: memvault "+path) {
			t.Errorf("memvault help %s: no usage line:\n%s", path, out)
		}
		for _, f := range cmd.Flags {
			line := helpLine(out, "--"+f.Names()[0]+" ", "--"+f.Names()[0]+"\n")
			if line == "" {
				t.Errorf("memvault help %s does not list --%s:\n%s", path, f.Names()[0], out)
				continue
			}
			for _, n := range f.Names()[1:] {
				if !strings.Contains(line, dashed(n)+",") {
					t.Errorf("memvault help %s: --%s's line does not show %s: %q", path, f.Names()[0], dashed(n), line)
				}
			}
			if strings.Count(strings.ToLower(line), "default") > 1 {
				t.Errorf("memvault help %s: --%s shows its default twice: %q", path, f.Names()[0], line)
			}
			if _, isInt := f.(*ucli.IntFlag); isInt && strings.Contains(line, "(default: 0)") {
				t.Errorf("memvault help %s: --%s shows (default: 0), which means \"not given\": %q", path, f.Names()[0], line)
			}
			for _, v := range values[path+" --"+f.Names()[0]] {
				if !namesAll(line, []string{v}) {
					t.Errorf("memvault help %s: --%s does not list the value %q: %q", path, f.Names()[0], v, line)
				}
			}
		}
		for key, vs := range values {
			if arg, ok := strings.CutPrefix(key, path+" "); ok && !strings.HasPrefix(arg, "-") {
				line := helpLine(out, "  "+arg+"  one of: ")
				for _, v := range vs {
					if !namesAll(line, []string{v}) {
						t.Errorf("memvault help %s: %s does not list %q: %q", path, arg, v, line)
					}
				}
			}
		}
		if !strings.Contains(out, "--agent ID") {
			t.Errorf("memvault help %s does not show the global flags:\n%s", path, out)
		}
	}
}

// helpLine is the first line of out holding one of subs ("" for none).
func helpLine(out string, subs ...string) string {
	for _, l := range strings.SplitAfter(out, "\n") {
		if !strings.HasPrefix(l, "  ") {
			continue // a flag's line, or an argument's, is indented
		}
		for _, s := range subs {
			if strings.Contains(l, s) {
				return l
			}
		}
	}
	return ""
}

// TestShortFlagsMeanOneThing: a one-letter flag means the same long flag on
// every command that has it (docs/API.md, "Short flags").
func TestShortFlagsMeanOneThing(t *testing.T) {
	table := shortFlags()
	used := map[string]bool{"h": true, "v": true}
	check := func(where string, flags []ucli.Flag) {
		for _, f := range flags {
			for _, n := range f.Names() {
				if len(n) != 1 {
					continue
				}
				used[n] = true
				if table[n] != f.Names()[0] {
					t.Errorf("%s: -%s means --%s, but -%s is --%s everywhere (shortFlags)", where, n, f.Names()[0], n, table[n])
				}
			}
			if len(f.Names()[0]) == 1 {
				t.Errorf("%s: flag -%s has no long name", where, f.Names()[0])
			}
		}
	}
	app := newApp(nil, io.Discard, io.Discard)
	check("memvault", app.Flags)
	for path, c := range everyCommand() {
		check("memvault "+path, c.Flags)
	}
	for n, long := range table {
		if !used[n] {
			t.Errorf("shortFlags has -%s (--%s), which no command uses", n, long)
		}
	}
	// The table in docs/API.md says the same.
	doc := readAPIDoc(t)
	for n, long := range table {
		if !strings.Contains(doc, "| `-"+n+"` | `--"+long+"` |") {
			t.Errorf("docs/API.md, \"Short flags\": no row for -%s, --%s", n, long)
		}
	}
}

func readAPIDoc(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestDidYouMean: a typo of a command, a subcommand or a flag is exit 2
// naming the nearest; a word near nothing gets the help to read instead.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"statsu"}, `memvault: unknown command "statsu"; did you mean "status"?` + "\n"},
		{[]string{"remembr", "x"}, `memvault: unknown command "remembr"; did you mean "remember"?` + "\n"},
		{[]string{"rem", "x"}, `memvault: unknown command "rem"; did you mean "remember"?` + "\n"},
		{[]string{"commitment", "opne", "x"}, `memvault: unknown command "commitment opne"; did you mean "commitment open"?` + "\n"},
		{[]string{"threads", "shwo"}, `memvault: unknown command "threads shwo"; did you mean "threads show"?` + "\n"},
		{[]string{"help", "statsu"}, `memvault: unknown command "statsu"; did you mean "status"?` + "\n"},
		{[]string{"help", "continuity", "lernings"}, `memvault: unknown command "continuity lernings"; did you mean "continuity learnings"?` + "\n"},
		{[]string{"--json", "statsu"}, `{"error":"unknown command \"statsu\"; did you mean \"status\"?","code":2,"class":"invalid"}` + "\n"},
		{[]string{"frobnicate"}, "memvault: unknown command \"frobnicate\"\nhint: memvault help lists its commands\n"},
		{[]string{"--bogus", "status"}, "memvault: unknown flag --bogus\nhint: memvault help lists the global flags\n"},
		{[]string{"--vualt", "x", "status"}, "memvault: unknown flag --vualt; did you mean --vault?\n"},
		{[]string{"status", "--jsno"}, "memvault: status: unknown flag --jsno; did you mean --json?\n"},
		{[]string{"log", "--limti", "3"}, "memvault: log: unknown flag --limti; did you mean --limit?\n"},
		{[]string{"commitment", "close", "--nte", "x", "e_1"}, "memvault: commitment close: unknown flag --nte; did you mean --note?\n"},
		{[]string{"render", "-n"}, "memvault: render: unknown flag -n; did you mean --dry-run? (-n means --limit everywhere now)\n"},
		{[]string{"sync", "-n"}, "memvault: sync: unknown flag -n; did you mean --dry-run? (-n means --limit everywhere now)\n"},
		{[]string{"status", "-x"}, "memvault: status: unknown flag -x\nhint: memvault help status lists its flags\n"},
		{[]string{"log", "--limit", "x"}, "memvault: log: --limit \"x\": want a whole number\n"},
		{[]string{"log", "--limit"}, "memvault: log: --limit needs a value\n"},
		{[]string{"gc", "--expire", "soon"}, "memvault: gc: --expire \"soon\": want a duration (90s, 10m, 336h)\n"},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != ExitUsage || out != "" || errOut != tc.want {
			t.Errorf("memvault %q: exit %d, stdout %q, stderr %q; want exit 2, stderr %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"status", "sync", "supersede", "remember", "recall", "render", "repair", "log", "ledger"}
	for word, want := range map[string]string{
		"statsu": "status", "stauts": "status", "sttaus": "status", "snyc": "sync", "rcall": "recall",
		"lgo": "log", "ledgr": "ledger", "remembre": "remember", "supersed": "supersede",
		"re": "", "x": "", "zzzzzz": "", "rep": "repair", "s": "",
		"rendre": "render", "reder": "render",
	} {
		if got := closest(word, names); got != want {
			t.Errorf("closest(%q) = %q, want %q", word, got, want)
		}
	}
}

// TestGlobalFlagsAnywhere: --vault and --agent are read the same before
// the command, after it, after its arguments and as --flag=value; a
// command with a flag of the same name (install's --vault switch) keeps
// its own after its name.
func TestGlobalFlagsAnywhere(t *testing.T) {
	app := newApp(nil, io.Discard, io.Discard)
	for _, args := range [][]string{
		{"--vault", "V", "--agent", "A", "remember", "--kind", "fact", "hello", "world"},
		{"remember", "--vault", "V", "--kind", "fact", "hello", "--agent", "A", "world"},
		{"remember", "hello", "world", "--vault=V", "--agent=A", "-k", "fact"},
		{"--agent", "A", "remember", "--kind=fact", "hello", "--vault", "V", "world"},
	} {
		l := parseLine(app, args)
		if l.err != nil || strings.Join(l.path, " ") != "remember" ||
			!slices.Equal(l.args, []string{"hello", "world"}) || !hasGlobal(l.globals, "vault", "V") || !hasGlobal(l.globals, "agent", "A") {
			t.Errorf("parseLine(%q) = path %q, globals %q, flags %q, args %q, err %v", args, l.path, l.globals, l.flags, l.args, l.err)
		}
	}
	l := parseLine(app, []string{"install", "git", "--vault", "--project"})
	if len(l.globals) != 0 || !slices.Equal(l.flags, []string{"--vault", "--project"}) {
		t.Errorf("install git --vault: globals %q, flags %q: install's own --vault must stay the command's", l.globals, l.flags)
	}
	l = parseLine(app, []string{"--vault", "V", "install", "git", "--vault"})
	if !slices.Equal(l.globals, []string{"--vault", "V"}) || !slices.Equal(l.flags, []string{"--vault"}) {
		t.Errorf("--vault V install git --vault: globals %q, flags %q", l.globals, l.flags)
	}
	// After --, everything is text: a global flag's name included.
	l = parseLine(app, []string{"remember", "--", "--vault", "x", "-h", "--json"})
	if len(l.globals) != 0 || l.help || l.json || !slices.Equal(l.args, []string{"--vault", "x", "-h", "--json"}) {
		t.Errorf("remember -- --vault x -h --json: globals %q, help %v, json %v, args %q", l.globals, l.help, l.json, l.args)
	}
	if argv := l.argv(); !slices.Equal(argv[len(argv)-5:], []string{"--", "--vault", "x", "-h", "--json"}) {
		t.Errorf("argv %q: the text after -- must stay behind --", argv)
	}
	// A flag's value is not read as a flag.
	l = parseLine(app, []string{"remember", "--data", "--json", "x"})
	if l.json || !slices.Equal(l.flags, []string{"--data", "--json"}) {
		t.Errorf("remember --data --json x: json %v, flags %q", l.json, l.flags)
	}
	for arg, want := range map[string]bool{"--json": true, "--json=true": true, "--json=1": true, "--json=false": false, "--json=0": false} {
		if l := parseLine(app, []string{"status", arg}); l.json != want {
			t.Errorf("status %s: json mode %v, want %v", arg, l.json, want)
		}
	}
}

func hasGlobal(globals []string, name, value string) bool {
	for i, g := range globals {
		if g == "--"+name+"="+value || g == "--"+name && i+1 < len(globals) && globals[i+1] == value {
			return true
		}
	}
	return false
}

// TestGlobalVaultAfterTheCommand runs the commands for real: a vault named
// by --vault after the command is the one used, and a vault that does not
// exist is exit 3 either way.
func TestGlobalVaultAfterTheCommand(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	before, _, errBefore := runCLI(t, "--vault", missing, "status")
	after, _, errAfter := runCLI(t, "status", "--vault", missing)
	if before != ExitNotFound || after != ExitNotFound || errBefore != errAfter {
		t.Errorf("--vault before status: exit %d %q; after: exit %d %q", before, errBefore, after, errAfter)
	}
}

// TestVersion: `memvault version`, --version and -v print one line naming
// the Go toolchain; --json parses and carries the same.
func TestVersion(t *testing.T) {
	_, want, _ := runCLI(t, "version")
	if !strings.HasPrefix(want, "memvault ") || !strings.Contains(want, " go1.") || strings.Count(want, "\n") != 1 {
		t.Errorf("memvault version = %q", want)
	}
	for _, args := range [][]string{{"--version"}, {"-v"}, {"--agent", "x", "--version"}} {
		if code, out, _ := runCLI(t, args...); code != 0 || out != want {
			t.Errorf("memvault %q: exit %d, %q; want %q", args, code, out, want)
		}
	}
	for _, args := range [][]string{{"version", "--json"}, {"--version", "--json"}} {
		code, out, _ := runCLI(t, args...)
		var v versionInfo
		if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Go == "" || v.Platform == "" || v.String()+"\n" != want {
			t.Errorf("memvault %q: exit %d, %q (%v)", args, code, out, err)
		}
	}
	if code, _, _ := runCLI(t, "version", "extra"); code != ExitUsage {
		t.Errorf("memvault version extra: exit %d, want 2", code)
	}
	v := versionInfo{Version: "v1.2.3", Revision: "0123456789abcdef0123", Time: "2026-11-23T10:00:00Z", Modified: true, Go: "go1.26.8", Platform: "linux/amd64"}
	if got := v.String(); got != "memvault v1.2.3 (0123456789ab, 2026-11-23T10:00:00Z, modified) go1.26.8 linux/amd64" {
		t.Errorf("version line %q", got)
	}
}

// flagProblem reads the flag package's three errors, a value holding the
// separator included, and nothing else.
func TestFlagProblem(t *testing.T) {
	for _, c := range []struct{ msg, kind, name, value string }{
		{"flag provided but not defined: -bogus", "undefined", "bogus", ""},
		{"flag provided but not defined: --vault-x", "undefined", "vault-x", ""},
		{"flag needs an argument: -limit", "novalue", "limit", ""},
		{`invalid value "x" for flag -limit: parse error`, "badvalue", "limit", "x"},
		{`invalid value "a" for flag -b" for flag -limit: parse error`, "badvalue", "limit", `a" for flag -b`},
		{`invalid value "x" for flag -limit`, "", "", ""},
		{"open /x: no such file", "", "", ""},
	} {
		kind, name, value := flagProblem(c.msg)
		if kind != c.kind || name != c.name || value != c.value {
			t.Errorf("flagProblem(%q) = %q, %q, %q; want %q, %q, %q", c.msg, kind, name, value, c.kind, c.name, c.value)
		}
	}
}
