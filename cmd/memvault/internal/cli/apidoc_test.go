package cli

import (
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
