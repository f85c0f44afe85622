package cli

import (
	"io"
	"slices"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// walkCommands calls fn for every command that runs, by its path.
func walkCommands(fn func(path string, c *ucli.Command)) {
	var walk func(prefix string, cs []*ucli.Command)
	walk = func(prefix string, cs []*ucli.Command) {
		for _, c := range cs {
			if c.Action != nil {
				fn(prefix+c.Name, c)
			}
			walk(prefix+c.Name+" ", c.Subcommands)
		}
	}
	walk("", newApp(nil, io.Discard, io.Discard).Commands)
}

func flagNamed(c *ucli.Command, name string) ucli.Flag {
	for _, f := range c.Flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// listings are the commands that print a list that grows with the vault.
var listings = []string{"ledger", "log", "sessions", "nodes", "threads", "transcript show", "recall",
	"continuity learnings", "continuity decisions"}

// TestEveryListingTakesLimit: each listing has --limit with -n, and one
// definition of it (limitFlag's usage), so -n means one thing.
func TestEveryListingTakesLimit(t *testing.T) {
	seen := map[string]bool{}
	walkCommands(func(path string, c *ucli.Command) {
		if !slices.Contains(listings, path) {
			return
		}
		seen[path] = true
		f, ok := flagNamed(c, "limit").(*ucli.IntFlag)
		if !ok {
			t.Errorf("memvault %s has no --limit", path)
			return
		}
		if !slices.Contains(f.Aliases, "n") {
			t.Errorf("memvault %s: --limit has no -n", path)
		}
		if !strings.HasPrefix(f.Usage, "at most N ") {
			t.Errorf("memvault %s: --limit's usage %q does not read like the others", path, f.Usage)
		}
	})
	for _, l := range listings {
		if !seen[l] {
			t.Errorf("listing %s is not a command", l)
		}
	}
}

func TestDefaultLimit(t *testing.T) {
	for _, tc := range []struct {
		flagDefault    int
		json, terminal bool
		want           int
	}{
		{0, false, true, terminalListLimit}, // a person at a terminal
		{0, false, false, 0},                // a pipe: everything
		{0, true, true, 0},                  // JSON: everything
		{20, false, false, 20},              // log's own default holds everywhere
		{20, true, true, 20},
	} {
		if got := defaultLimit(tc.flagDefault, tc.json, tc.terminal); got != tc.want {
			t.Errorf("defaultLimit(%d, json %v, terminal %v) = %d, want %d", tc.flagDefault, tc.json, tc.terminal, got, tc.want)
		}
	}
}

func TestNewestAndFirst(t *testing.T) {
	list := []int{1, 2, 3, 4, 5}
	if got := newest(list, 2); !slices.Equal(got, []int{4, 5}) {
		t.Errorf("newest 2 = %v", got)
	}
	if got := first(list, 2); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("first 2 = %v", got)
	}
	if got := newest(list, 0); !slices.Equal(got, list) {
		t.Errorf("newest 0 = %v, want all", got)
	}
	if got := first(list, 9); !slices.Equal(got, list) {
		t.Errorf("first 9 = %v, want all", got)
	}
}

func TestNearest(t *testing.T) {
	kinds := []string{"fact", "decision", "learning", "commitment.open", "commitment.close", "head.rendered"}
	for in, want := range map[string]string{
		"decisions":                      "decision",
		"fcat":                           "fact",
		"Fact":                           "fact",
		"learnings":                      "learning",
		"commitment":                     "", // a prefix of two: no guess
		"comitment.clos":                 "commitment.close",
		"rendered":                       "", // far from head.rendered, and not a prefix
		"head":                           "head.rendered",
		"opinion":                        "",
		"x":                              "",
		"":                               "",
		strings.Repeat("decision", 1000): "",
	} {
		if got := nearest(in, kinds); got != want {
			t.Errorf("nearest(%.20q) = %q, want %q", in, got, want)
		}
	}
}

// TestCheckChoice: an unknown value is a usage error (exit 2) naming the
// flag and every valid value; a known or empty one passes.
func TestCheckChoice(t *testing.T) {
	valid := []string{"day", "week"}
	if err := checkChoice("condense", "period", "", valid); err != nil {
		t.Errorf("empty value: %v", err)
	}
	if err := checkChoice("condense", "period", "week", valid); err != nil {
		t.Errorf("valid value: %v", err)
	}
	err := checkChoice("condense", "period", "month", valid)
	if exitCode(err) != ExitUsage {
		t.Errorf("unknown value exits %d, want %d", exitCode(err), ExitUsage)
	}
	if want := `condense: --period "month": want one of day, week`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
