package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/node"

	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/clones"
	"github.com/memvault/memvault/vault/executor"
	"github.com/memvault/memvault/vault/gc"
	"github.com/memvault/memvault/vault/recall"
	"github.com/memvault/memvault/vault/transcript"

	ucli "github.com/urfave/cli/v2"
)

// The help memvault prints itself: `memvault help [--all] [COMMAND…]`,
// `-h` and `--help` anywhere on a line (the help of the command named
// there), and a group named without one of its commands. urfave/cli's own
// help is switched off: this one groups the commands by what a person does
// with them, shows each default once, and lists the values of every flag
// that takes one of a closed set.

// commandGroup is a heading of the top-level help and its commands, in
// the order shown.
type commandGroup struct {
	title    string
	commands []string
	plumbing bool // run by harnesses and git: listed by help --all only
}

// commandGroups puts every top-level command under one heading
// (TestHelpGroupsEveryCommand holds new commands to it).
func commandGroups() []commandGroup {
	return []commandGroup{
		{title: "Getting started", commands: []string{"init", "install", "uninstall", "doctor"}},
		{title: "Remembering", commands: []string{"remember", "commitment", "claim", "reflect", "retract", "supersede"}},
		{title: "Reading", commands: []string{"recall", "status", "ledger", "replay", "metrics", "export", "log", "threads", "sessions", "serve"}},
		{title: "Heads and continuity", commands: []string{"render", "edit", "resolve", "continuity", "goal", "next", "done", "learn", "decide"}},
		{title: "Lineage and nodes", commands: []string{"transcript", "summarize", "compact", "condense", "nodes", "expand"}},
		{title: "Delegation", commands: []string{"delegate", "executor", "audit"}},
		{title: "Maintenance", commands: []string{"verify", "repair", "gc", "reindex", "sync", "import", "policy", "jobs"}},
		{title: "Help", commands: []string{"help", "version"}},
		{title: "Plumbing (run by harnesses and git)", commands: []string{"hook", "context", "mcp", "refresh", "merge-driver"}, plumbing: true},
	}
}

// closedValues lists, per flag ("remember --kind") or argument
// ("hook HARNESS"), the values it takes, from the packages that check
// them: the help lists them, and TestEveryCommandHelp checks it does.
func closedValues() map[string][]string {
	scopes := []string{string(hooks.ScopeProject), string(hooks.ScopeUser)}
	var formats []string
	for _, f := range transcript.Formats() {
		formats = append(formats, string(f))
	}
	roles := []string{string(transcript.RoleUser), string(transcript.RoleAssistant), string(transcript.RoleTool), string(transcript.RoleSystem)}
	return map[string][]string{
		"remember --kind":            vault.RememberKinds,
		"nodes --kind":               node.Kinds(),
		"recall --tier":              recall.Tiers,
		"goal --phase":               continuity.Phases,
		"condense --period":          vault.CondensePeriods,
		"transcript append --role":   roles,
		"transcript import --format": formats,
		"install --scope":            scopes,
		"uninstall --scope":          scopes,
		"doctor --scope":             scopes,
		"gc --engine":                {gc.EngineAuto, gc.EngineGit, gc.EngineGoGit},
		"sync --engine":              {clones.SyncEngineAuto, clones.SyncEngineGit, clones.SyncEngineGoGit},
		"refresh --on":               vault.RefreshEvents,
		"delegate --mode":            executor.RunModes,
		"executor add --preset":      executor.Presets(),
		"hook HARNESS":               hooks.Names(),
		"install HARNESS":            append(hooks.Names(), "git"),
		"uninstall HARNESS":          append(hooks.Names(), "git"),
	}
}

// helpOptions: all lists the plumbing commands too; path names the
// command whose help to show, none for memvault's own.
type helpOptions struct {
	all  bool
	path []string
}

func newHelpCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "help",
		Usage:     "show the commands, or one command's flags and arguments",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
	}
}

func (o *helpOptions) flags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "all", Usage: "also list the plumbing commands harnesses and git run", Destination: &o.all},
	}
}

func (o *helpOptions) setArgs(args []string) { o.path = args }

func runHelp(_ context.Context, opts helpOptions, e env) error {
	return e.help(opts.path, opts)
}

// printHelp writes the help of the command at path, or memvault's own for
// an empty path.
func printHelp(w io.Writer, app *ucli.App, path []string, opts helpOptions) error {
	if len(path) == 0 {
		printAppHelp(w, app, opts)
		return nil
	}
	cmds := app.Commands
	var cmd *ucli.Command
	for i, name := range path {
		cmd = findCommand(cmds, name)
		if cmd == nil {
			return unknownCommand(path[:i], name, cmds)
		}
		cmds = cmd.Subcommands
	}
	printCommandHelp(w, app, path, cmd)
	return nil
}

func printAppHelp(w io.Writer, app *ucli.App, opts helpOptions) {
	fmt.Fprintf(w, "memvault: %s\n\n", app.Usage)
	fmt.Fprintf(w, "Usage: memvault [--vault DIR] [--agent ID] COMMAND [flags] [arguments]\n")
	width := 0
	for _, c := range app.Commands {
		width = max(width, len(c.Name))
	}
	for _, g := range commandGroups() {
		if g.plumbing && !opts.all {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.commands {
			if c := findCommand(app.Commands, name); c != nil {
				fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name, c.Usage)
			}
		}
	}
	fmt.Fprintf(w, "\nGlobal flags (before or after the command):\n")
	printFlags(w, "", append(slices.Clone(app.Flags), rootOnlyFlags()...), nil)
	fmt.Fprintf(w, "\n`memvault help COMMAND` (or `memvault COMMAND --help`) shows a command's flags and arguments.\n")
	if !opts.all {
		fmt.Fprintf(w, "`memvault help --all` also lists the plumbing commands harnesses and git run.\n")
	}
	fmt.Fprintf(w, "Reference: docs/API.md. Exit codes: 0 ok, 2 bad input, 3 not found, 4 conflict, 5 busy, 6 corrupt, 7 i/o, 8 remote, 1 a bug.\n")
}

// rootOnlyFlags are the flags the root answers itself, shown in its help.
func rootOnlyFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "help", Aliases: []string{"h"}, Usage: "show this help, or a command's (anywhere on the line)"},
		&ucli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version (as memvault version)"},
	}
}

func printCommandHelp(w io.Writer, app *ucli.App, path []string, cmd *ucli.Command) {
	full := strings.Join(path, " ")
	fmt.Fprintf(w, "memvault %s: %s\n\n", full, cmd.Usage)
	usage := "memvault " + full
	if len(cmd.Subcommands) > 0 {
		usage += " COMMAND"
	}
	if len(cmd.VisibleFlags()) > 0 {
		usage += " [flags]"
	}
	if a := strings.TrimSpace(cmd.ArgsUsage); a != "" {
		usage += " " + a
	}
	fmt.Fprintf(w, "Usage: %s\n", usage)
	if d := strings.TrimSpace(cmd.Description); d != "" {
		fmt.Fprintf(w, "\n%s\n", d)
	}
	if len(cmd.Subcommands) > 0 {
		fmt.Fprintf(w, "\nCommands:\n")
		width := 0
		for _, s := range cmd.Subcommands {
			width = max(width, len(s.Name))
		}
		for _, s := range cmd.Subcommands {
			if !s.Hidden {
				fmt.Fprintf(w, "  %-*s  %s\n", width, s.Name, s.Usage)
			}
		}
	}
	values := closedValues()
	var argLines []string
	for key, vs := range values {
		if arg, ok := strings.CutPrefix(key, full+" "); ok && !strings.HasPrefix(arg, "-") {
			argLines = append(argLines, fmt.Sprintf("  %s  one of: %s\n", arg, strings.Join(vs, ", ")))
		}
	}
	if len(argLines) > 0 {
		slices.Sort(argLines)
		fmt.Fprintf(w, "\nArguments:\n%s", strings.Join(argLines, ""))
	}
	if len(cmd.Flags) > 0 {
		fmt.Fprintf(w, "\nFlags:\n")
		printFlags(w, full, cmd.Flags, values)
	}
	// The global flags the command does not hide with one of its own.
	var globals []ucli.Flag
	var shadowed []string
	for _, g := range app.Flags {
		if lookupFlag(cmd.Flags, g.Names()[0]) == nil {
			globals = append(globals, g)
		} else {
			shadowed = append(shadowed, dashed(g.Names()[0]))
		}
	}
	fmt.Fprintf(w, "\nGlobal flags:\n")
	printFlags(w, "", globals, nil)
	for _, s := range shadowed {
		fmt.Fprintf(w, "  (the global %s goes before %q: after it, %s is the command's own)\n", s, full, s)
	}
}

// printFlags writes one line per flag: its names and placeholder, what it
// does, the values it takes, its default, its environment variable.
func printFlags(w io.Writer, path string, flags []ucli.Flag, values map[string][]string) {
	type line struct{ left, right string }
	var lines []line
	width := 0
	for _, f := range flags {
		if v, ok := f.(ucli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		left := flagNames(f)
		if ph := placeholder(f); ph != "" {
			left += " " + ph
		}
		width = max(width, len(left))
		lines = append(lines, line{left, flagUsage(f, values[path+" --"+f.Names()[0]])})
	}
	for _, l := range lines {
		fmt.Fprintf(w, "  %-*s  %s\n", width, l.left, l.right)
	}
}

// flagNames is "-k, --kind" (short names first), "    --json" for a flag
// without one, so the long names line up.
func flagNames(f ucli.Flag) string {
	var short, long []string
	for _, n := range f.Names() {
		if len(n) == 1 {
			short = append(short, "-"+n)
		} else {
			long = append(long, "--"+n)
		}
	}
	if len(short) == 0 {
		return "    " + strings.Join(long, ", ")
	}
	return strings.Join(append(short, long...), ", ")
}

// placeholder names the value a flag takes; "" for a switch.
func placeholder(f ucli.Flag) string {
	switch f.(type) {
	case *ucli.BoolFlag:
		return ""
	case *ucli.IntFlag, *ucli.Int64Flag, *ucli.UintFlag:
		return "N"
	case *ucli.DurationFlag:
		return "DURATION"
	}
	name := f.Names()[0]
	switch name {
	case "vault":
		return "DIR"
	case "agent", "link", "supersedes", "invalidate", "correct":
		return "ID"
	case "at":
		return "COMMIT"
	case "now", "since", "until":
		return "DATE"
	}
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// flagUsage is what the help says of a flag: its usage, the values of a
// closed set (unless the usage names them all), its default when it has
// one worth showing, and its environment variables.
func flagUsage(f ucli.Flag, values []string) string {
	df, ok := f.(ucli.DocGenerationFlag)
	if !ok {
		return ""
	}
	out := df.GetUsage()
	if len(values) > 0 && !namesAll(out, values) {
		out += "; one of: " + strings.Join(values, ", ")
	}
	if def := defaultText(f); def != "" {
		out += " (default: " + def + ")"
	}
	if env := df.GetEnvVars(); len(env) > 0 {
		out += " [$" + strings.Join(env, ", $") + "]"
	}
	return out
}

// namesAll reports whether text names every value, each as a whole word.
func namesAll(text string, values []string) bool {
	words := strings.FieldsFunc(text, func(r rune) bool {
		return !(r == '-' || r == '.' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	for _, v := range values {
		if !slices.Contains(words, v) {
			return false
		}
	}
	return true
}

// defaultText is the default a flag's help shows: its DefaultText, else
// its value when that is not the type's zero (a zero int or an empty
// string is "not given", which the usage explains in words when it means
// something).
func defaultText(f ucli.Flag) string {
	switch f := f.(type) {
	case *ucli.StringFlag:
		return cmp.Or(f.DefaultText, f.Value)
	case *ucli.IntFlag:
		if f.DefaultText == "" && f.Value != 0 {
			return fmt.Sprint(f.Value)
		}
		return f.DefaultText
	case *ucli.DurationFlag:
		if f.DefaultText == "" && f.Value != 0 {
			return shortDuration(f.Value)
		}
		return f.DefaultText
	case *ucli.BoolFlag:
		return f.DefaultText
	case *ucli.StringSliceFlag:
		return f.DefaultText
	}
	return ""
}

// shortDuration prints 336h rather than 336h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// shortFlags is the meaning of every one-letter flag, the same on every
// command that has it (docs/API.md, "Short flags"; TestShortFlagsMeanOneThing
// holds the command tree to it).
func shortFlags() map[string]string {
	return map[string]string{
		"h": "help",
		"v": "version",
		"t": "thread",
		"k": "kind",
		"n": "limit",
		"d": "decision",
		"r": "rationale",
		"e": "error",
		"c": "cause",
		"p": "prevention",
		"o": "output",
	}
}
