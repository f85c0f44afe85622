package cli

import (
	"fmt"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Did you mean: the messages for an unknown command or flag, and for a
// flag urfave/cli (Go's flag package, underneath) refused, with the nearest
// name when one is near enough. Exit 2, like every usage error.

// unknownCommand is the error for word, typed where one of cmds was
// expected after the command path.
func unknownCommand(path []string, word string, cmds []*ucli.Command) error {
	full := strings.Join(append(slices.Clone(path), word), " ")
	if near := closest(word, commandNames(cmds)); near != "" {
		return &usageError{msg: fmt.Sprintf("unknown command %q; did you mean %q?", full,
			strings.Join(append(slices.Clone(path), near), " "))}
	}
	return &usageError{msg: fmt.Sprintf("unknown command %q", full), hint: helpHint(path, "its commands")}
}

// unknownFlag is the error for arg, a flag none of flags is: the command's
// own, or for cmd "" the global ones.
func unknownFlag(cmd string, arg string, flags []ucli.Flag) error {
	name := flagName(arg)
	msg := "unknown flag " + dashed(name)
	if cmd != "" {
		msg = cmd + ": " + msg
	}
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	if cmd == "" {
		names = append(names, "help", "version")
	}
	if near := closest(name, names); near != "" {
		return &usageError{msg: fmt.Sprintf("%s; did you mean %s?", msg, dashed(near))}
	}
	if long, ok := retiredShort()[name]; ok && lookupFlag(flags, long) != nil {
		return &usageError{msg: fmt.Sprintf("%s; did you mean %s? (%s means %s everywhere now)",
			msg, dashed(long), dashed(name), dashed(shortFlags()[name]))}
	}
	what := "its flags"
	if cmd == "" {
		what = "the global flags"
	}
	return &usageError{msg: msg, hint: helpHint(strings.Fields(cmd), what)}
}

// retiredShort are short flags that meant something else on some commands
// before each letter got one meaning (docs/API.md, "Short flags"): -n was
// --dry-run on render and sync.
func retiredShort() map[string]string { return map[string]string{"n": "dry-run"} }

// helpHint points at the help that lists what was mistyped.
func helpHint(path []string, what string) string {
	return fmt.Sprintf("%s lists %s", strings.Join(append([]string{"memvault help"}, path...), " "), what)
}

// dashed is a flag's name as typed: -n, --limit.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// commandNames lists the names people type for cmds (git runs the hidden
// ones; they are not suggested).
func commandNames(cmds []*ucli.Command) []string {
	var out []string
	for _, c := range cmds {
		if !c.Hidden {
			out = append(out, c.Name)
		}
	}
	return out
}

// flagProblem reads one of Go's flag package's errors, as urfave/cli
// passes them on: what is wrong ("undefined", "novalue", "badvalue"), the
// flag's name and, for a bad value, the value. Plain string cuts, not
// regular expressions: nothing is compiled when memvault starts.
func flagProblem(msg string) (kind, name, value string) {
	if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "undefined", strings.TrimLeft(rest, "-"), ""
	}
	if rest, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return "novalue", strings.TrimLeft(rest, "-"), ""
	}
	if rest, ok := strings.CutPrefix(msg, `invalid value "`); ok {
		const mid = `" for flag -`
		if i := strings.LastIndex(rest, mid); i >= 0 {
			name, _, found := strings.Cut(rest[i+len(mid):], ":")
			if found {
				return "badvalue", strings.TrimLeft(name, "-"), rest[:i]
			}
		}
	}
	return "", "", ""
}

// flagError rewrites a flag error of the command at path (its flags,
// flags) into memvault's words; any other error is kept as it is, as a
// usage error.
func flagError(path string, flags []ucli.Flag, err error) error {
	prefix := ""
	if path != "" {
		prefix = path + ": "
	}
	msg := err.Error()
	switch kind, name, value := flagProblem(msg); kind {
	case "undefined":
		return unknownFlag(path, "--"+name, flags)
	case "novalue":
		return &usageError{msg: fmt.Sprintf("%s%s needs a value", prefix, dashed(name))}
	case "badvalue":
		want := "a valid value"
		switch lookupFlag(flags, name).(type) {
		case *ucli.IntFlag, *ucli.Int64Flag, *ucli.UintFlag:
			want = "a whole number"
		case *ucli.DurationFlag:
			want = "a duration (90s, 10m, 336h)"
		case *ucli.BoolFlag:
			want = "true or false"
		}
		return &usageError{msg: fmt.Sprintf("%s%s %q: want %s", prefix, dashed(name), value, want)}
	}
	return &usageError{msg: prefix + msg}
}

// closest is the candidate word most likely meant: the one within a small
// edit distance (a transposition counts as one edit), else the only one
// word is a prefix of; "" when none is near enough or two are equally near.
func closest(word string, candidates []string) string {
	limit := 0 // a letter or two is too short to guess from
	switch {
	case len(word) >= 5:
		limit = 2
	case len(word) >= 3:
		limit = 1
	}
	best, bestD, tie := "", limit+1, false
	for _, c := range candidates {
		d := editDistance(word, c)
		switch {
		case d < bestD:
			best, bestD, tie = c, d, false
		case d == bestD && c != best:
			tie = true
		}
	}
	if best != "" && !tie {
		return best
	}
	if len(word) >= 2 {
		var prefixed []string
		for _, c := range candidates {
			if strings.HasPrefix(c, word) && !slices.Contains(prefixed, c) {
				prefixed = append(prefixed, c)
			}
		}
		if len(prefixed) == 1 {
			return prefixed[0]
		}
	}
	return ""
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and transpositions of neighbours.
// Words longer than any command, flag or value are cut first, so that a
// hostile one costs little.
func editDistance(a, b string) int {
	const most = 64
	x, y := []rune(a), []rune(b)
	x, y = x[:min(len(x), most)], y[:min(len(y), most)]
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
