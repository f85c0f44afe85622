package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Listings and filters: one --limit for every command that lists, and one
// way to refuse a filter value that matches nothing by construction
// (docs/API.md, "Listings and filters").

// terminalListLimit is how many entries a listing prints by default on a
// terminal: a screenful or two, the newest. Piped or with --json a
// listing prints everything, as a script expects; either way --limit N
// says otherwise and --limit 0 prints all.
const terminalListLimit = 50

// limitFlag is --limit / -n of a listing. def is its default; a default of
// 0 with onTerminal set means: all when not on a terminal or with --json,
// terminalListLimit on a terminal.
func limitFlag(what string, def int) *ucli.IntFlag {
	f := &ucli.IntFlag{Name: "limit", Aliases: []string{"n"}, Usage: "at most N " + what + " (0: all)", Value: def}
	if def == 0 {
		f.DefaultText = fmt.Sprintf("all, or %d on a terminal", terminalListLimit)
	}
	return f
}

// limitOptions are a listing's --limit: the number, and whether it was
// given (on the line); when it was not, the default depends on where the
// output goes (listLimit).
type limitOptions struct {
	limit    int
	limitSet bool
}

// limitFlag is limitFlag bound to o.
func (o *limitOptions) limitFlag(what string, def int) *ucli.IntFlag {
	f := limitFlag(what, def)
	f.Destination, f.Action = &o.limit, markSet[int](&o.limitSet)
	return f
}

// listLimit is a listing's limit: what the person asked for, else the
// default for where the output goes. 0 means no limit.
func (o limitOptions) listLimit(e env, json bool) (int, error) {
	if o.limit < 0 {
		return 0, usagef("%s: --limit must be 0 (all) or more", e.name)
	}
	if o.limitSet {
		return o.limit, nil
	}
	return defaultLimit(o.limit, json, outputIsTerminal(e.stdout)), nil
}

// defaultLimit is a listing's limit when --limit was not given: the flag's
// own default where it has one (log's 20), else all for a script or JSON
// and terminalListLimit for a person at a terminal.
func defaultLimit(flagDefault int, json, terminal bool) int {
	switch {
	case flagDefault > 0:
		return flagDefault
	case json || !terminal:
		return 0
	}
	return terminalListLimit
}

// outputIsTerminal reports whether w is a terminal (a character device): a
// person reads the listing, not a script.
func outputIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// newest keeps the last n of list (all when n is 0), in their order: a
// listing that runs oldest first shows the newest n.
func newest[T any](list []T, n int) []T {
	if n > 0 && len(list) > n {
		return list[len(list)-n:]
	}
	return list
}

// first keeps the first n of list (all when n is 0).
func first[T any](list []T, n int) []T {
	if n > 0 && len(list) > n {
		return list[:n]
	}
	return list
}

// emptyNote says on stderr that a listing found nothing, and what makes
// an entry: stdout stays empty for a script (as recall's "nothing found"),
// and a person is not left with a blank screen. JSON says nothing: [] is
// its answer.
func emptyNote(e env, json bool, total int, note string) {
	if total == 0 && !json {
		fmt.Fprintf(e.stderr, "memvault: %s\n", note)
	}
}

// limitNote says on stderr that a listing showed shown of total entries,
// and how to see the rest; nothing when it showed them all. JSON output
// says nothing: its reader asked for what it got.
func limitNote(e env, json bool, shown, total int, what, which string) {
	if shown >= total || json {
		return
	}
	fmt.Fprintf(e.stderr, "memvault: note: showing the %s %d of %d %s; --limit 0 shows all\n", which, shown, total, what)
}

// checkChoice refuses a filter value that is not one of valid (a flag's
// fixed set of values, taken from the package that owns it): exit 2, the
// valid values listed, and the nearest one offered when it is close.
func checkChoice(cmd, flag, value string, valid []string) error {
	if value == "" || slices.Contains(valid, value) {
		return nil
	}
	msg := fmt.Sprintf("%s: --%s %q: ", cmd, flag, shortValue(value))
	if near := nearest(value, valid); near != "" {
		msg += fmt.Sprintf("did you mean %s? ", near)
	}
	return usagef("%swant %s", msg, oneOf(valid))
}

// shortValue cuts a value a message repeats, so that a hostile one does
// not flood the terminal (%q escapes what is left).
func shortValue(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

// oneOf is the help text's list of a flag's values.
func oneOf(valid []string) string { return "one of " + strings.Join(valid, ", ") }

// nearest returns the value of valid a mistyped s most likely meant
// (closest, on s in lower case), else "".
func nearest(s string, valid []string) string { return closest(strings.ToLower(s), valid) }

// wrapList is valid, comma-separated, broken into lines for a help text's
// description.
func wrapList(valid []string) string {
	var b strings.Builder
	line := 0
	for i, v := range valid {
		word := v
		if i < len(valid)-1 {
			word += ","
		}
		if line > 0 && line+1+len(word) > 90 {
			b.WriteString("\n")
			line = 0
		} else if i > 0 {
			b.WriteString(" ")
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}
