package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// TestAPIDocListsEveryCommand ties docs/API.md to the command tree: every
// command and subcommand memvault has is named there, and every command the
// doc names exists. The doc names a command in a heading, as code
// (`memvault commitment open [--thread T] TEXT`, or `install` in a heading
// that lists several), or in the first cell of a table under a heading that
// ends in "commands". A command's words are the lower-case words before its
// first flag or upper-case placeholder.
func TestAPIDocListsEveryCommand(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := apiDocCommands(string(data))
	if len(documented) < 10 {
		t.Fatalf("found only %d commands in docs/API.md: has its structure changed? %v", len(documented), keys(documented))
	}
	// tree holds every command; runnable, those that do something of their
	// own. A group without an action (commitment, transcript, continuity)
	// only holds subcommands, and is documented through them.
	tree, runnable := map[string]bool{}, map[string]bool{}
	var walk func(prefix string, cs []*ucli.Command)
	walk = func(prefix string, cs []*ucli.Command) {
		for _, c := range cs {
			tree[prefix+c.Name] = true
			if c.Hidden {
				// Hidden from the help (git runs it, people do not): the
				// doc may name it, and need not.
				continue
			}
			if c.Action != nil || len(c.Subcommands) == 0 {
				runnable[prefix+c.Name] = true
			}
			walk(prefix+c.Name+" ", c.Subcommands)
		}
	}
	walk("", newApp(nil, io.Discard, io.Discard).Commands)

	for _, name := range keys(runnable) {
		if !documented[name] {
			t.Errorf("memvault %s is a command but docs/API.md does not document it", name)
		}
	}
	for _, name := range keys(documented) {
		if !tree[name] {
			t.Errorf("docs/API.md documents memvault %s, which is not a command", name)
		}
	}
}

var (
	codeSpanRE    = regexp.MustCompile("`([^`]+)`")
	commandWordRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// apiDocCommands returns the commands docs/API.md names, as space-separated
// paths ("commitment open"). Fenced code blocks are skipped: the CONTINUITY.md
// template there has headings of its own.
func apiDocCommands(doc string) map[string]bool {
	out := map[string]bool{}
	fenced, inCommandTable := false, false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		var spans []string
		switch {
		case strings.HasPrefix(line, "#"):
			title := strings.TrimSpace(strings.TrimLeft(line, "#"))
			inCommandTable = strings.HasSuffix(title, "commands")
			for _, m := range codeSpanRE.FindAllStringSubmatch(line, -1) {
				spans = append(spans, m[1])
			}
		case inCommandTable && strings.HasPrefix(line, "| `"):
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
			if m := codeSpanRE.FindStringSubmatch(cell); m != nil {
				spans = append(spans, m[1])
			}
		}
		for _, s := range spans {
			if name := commandPath(s); name != "" {
				out[name] = true
			}
		}
	}
	return out
}

// commandPath is the command a code span names: "memvault threads show T
// [--json]" names "threads show".
func commandPath(span string) string {
	words := strings.Fields(span)
	if len(words) > 0 && words[0] == "memvault" {
		words = words[1:]
	}
	n := 0
	for n < len(words) && commandWordRE.MatchString(words[n]) {
		n++
	}
	return strings.Join(words[:n], " ")
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestCommandPath(t *testing.T) {
	for span, want := range map[string]string{
		"memvault commitment open [--thread T] [--link ID]… TEXT": "commitment open",
		"memvault threads show T [--json]":                        "threads show",
		"memvault refresh --on session-end|compaction":            "refresh",
		"install": "install",
		"continuity learnings [--scope S] [--all] [--json]": "continuity learnings",
		"done TEXT \\| N": "done",
		"memvault edit [MEMORY.md | CONTINUITY.md | T]": "edit",
		"memvault": "",
	} {
		if got := commandPath(span); got != want {
			t.Errorf("commandPath(%q) = %q, want %q", span, got, want)
		}
	}
}

var updateAPIDoc = flag.Bool("update", false, "rewrite docs/API.md's generated command reference from the command tree")

// The generated part of docs/API.md lies between these lines.
const (
	apiRefBegin = "<!-- BEGIN the command reference, generated from the command tree: go test ./cmd/memvault/internal/cli -run TestAPIDocReference -update -->"
	apiRefEnd   = "<!-- END the command reference -->"
)

// TestAPIDocReference holds docs/API.md's command reference to the command
// tree: every command's arguments, flags, short names, defaults, closed
// sets of values and environment variables, as --help shows them. A
// command or flag added, renamed or changed without the doc fails it;
// -update rewrites the section (review the diff).
func TestAPIDocReference(t *testing.T) {
	path := filepath.Join("..", "..", "..", "..", "docs", "API.md")
	doc := readAPIDoc(t)
	begin, end := strings.Index(doc, apiRefBegin), strings.Index(doc, apiRefEnd)
	if begin < 0 || end < begin {
		t.Fatalf("docs/API.md has no generated command reference between %q and %q", apiRefBegin, apiRefEnd)
	}
	want := apiRefBegin + "\n" + apiReference() + apiRefEnd
	got := doc[begin : end+len(apiRefEnd)]
	if got == want {
		return
	}
	if *updateAPIDoc {
		if err := os.WriteFile(path, []byte(doc[:begin]+want+doc[end+len(apiRefEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Fatalf("docs/API.md's command reference is stale (go test ./cmd/memvault/internal/cli -run TestAPIDocReference -update rewrites it); first difference:\ndoc:  %s\ntree: %s", gl[i], wl[i])
		}
	}
	t.Fatalf("docs/API.md's command reference is stale (-update rewrites it): %d lines, the tree gives %d", len(gl), len(wl))
}

// apiReference renders the reference from the command tree: one entry per
// command, in the order of the help's groups.
func apiReference() string {
	app := newApp(nil, io.Discard, io.Discard)
	values := closedValues()
	var b strings.Builder
	b.WriteString("\nEvery command, its arguments and its flags, as `memvault help COMMAND`\n")
	b.WriteString("shows them; the global flags (`--vault DIR`, `--agent ID`, `-h`) are\n")
	b.WriteString("accepted by every command, before or after it (above). What each does\n")
	b.WriteString("is in the command's entry above or in the document it points to.\n")
	var walk func(path string, c *ucli.Command)
	walk = func(path string, c *ucli.Command) {
		usage := "memvault " + path
		if len(c.Subcommands) > 0 {
			usage += " COMMAND"
		}
		if len(c.Flags) > 0 {
			usage += " [flags]"
		}
		if a := strings.TrimSpace(c.ArgsUsage); a != "" {
			usage += " " + a
		}
		fmt.Fprintf(&b, "\n**`%s`**: %s", usage, c.Usage)
		if c.Hidden {
			b.WriteString(" (hidden from the help: listed by `help --all`)")
		}
		b.WriteString("\n")
		var args []string
		for key, vs := range values {
			if arg, ok := strings.CutPrefix(key, path+" "); ok && !strings.HasPrefix(arg, "-") {
				args = append(args, fmt.Sprintf("`%s`: one of %s", arg, "`"+strings.Join(vs, "`, `")+"`"))
			}
		}
		sort.Strings(args)
		for _, a := range args {
			fmt.Fprintf(&b, "\n%s.\n", a)
		}
		if len(c.Flags) > 0 {
			b.WriteString("\n| flag | meaning |\n| --- | --- |\n")
			for _, f := range c.Flags {
				left := strings.TrimSpace(flagNames(f))
				if ph := placeholder(f); ph != "" {
					left += " " + ph
				}
				meaning := flagUsage(f, values[path+" --"+f.Names()[0]])
				fmt.Fprintf(&b, "| `%s` | %s |\n", left, strings.ReplaceAll(meaning, "|", "\\|"))
			}
		}
		for _, s := range c.Subcommands {
			walk(path+" "+s.Name, s)
		}
	}
	for _, g := range commandGroups() {
		fmt.Fprintf(&b, "\n### %s\n", g.title)
		for _, name := range g.commands {
			walk(name, findCommand(app.Commands, name))
		}
	}
	b.WriteString("\n")
	return b.String()
}

// TestAPIDocFlagsExist: every flag the doc's command headings and command
// tables name (`memvault ledger [--kind K] … [--json]`) is a flag of that
// command, or a global one.
func TestAPIDocFlagsExist(t *testing.T) {
	doc := readAPIDoc(t)
	if i := strings.Index(doc, apiRefBegin); i >= 0 {
		doc = doc[:i] // the generated reference is checked whole
	}
	cmds := everyCommand()
	app := newApp(nil, io.Discard, io.Discard)
	fenced, inCommandTable := false, false
	for n, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		var spans []string
		switch {
		case fenced:
			continue
		case strings.HasPrefix(line, "#"):
			inCommandTable = strings.HasSuffix(strings.TrimSpace(strings.TrimLeft(line, "#")), "commands")
			for _, m := range codeSpanRE.FindAllStringSubmatch(line, -1) {
				spans = append(spans, m[1])
			}
		case inCommandTable && strings.HasPrefix(line, "| `"):
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
			if m := codeSpanRE.FindStringSubmatch(cell); m != nil {
				spans = append(spans, m[1])
			}
		}
		for _, s := range spans {
			path := commandPath(s)
			cmd := cmds[path]
			if cmd == nil {
				continue // TestAPIDocListsEveryCommand reports it
			}
			for _, m := range docFlagRE.FindAllStringSubmatch(s, -1) {
				name := strings.TrimLeft(m[1], "-")
				if lookupFlag(cmd.Flags, name) == nil && lookupFlag(app.Flags, name) == nil && name != "help" && name != "h" {
					t.Errorf("docs/API.md:%d: `%s` names %s, which memvault %s does not have", n+1, s, m[1], path)
				}
			}
		}
	}
}

var docFlagRE = regexp.MustCompile(`(?:^|[\s\[(|])(--?[a-z][a-z0-9-]*)`)
