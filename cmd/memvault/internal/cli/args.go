package cli

import (
	"slices"
	"strconv"
	"strings"

	"github.com/memvault/memvault/vault/heads"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

// Reading what people type: flags moved in front of positional arguments,
// texts, ids, dates and thread names.

// commandLine is what a person typed, read once before urfave/cli parses
// it: the global flags (wherever they were typed), the command's path, its
// own flags moved in front of its positional arguments, and the requests
// the root answers itself (help, version).
type commandLine struct {
	globals []string      // global flags and their values, in the order typed
	path    []string      // the command's names: ["commitment", "open"]
	cmd     *ucli.Command // the innermost command named; nil for none
	flags   []string      // the command's own flags and their values
	args    []string      // the command's positional arguments
	help    bool          // -h or --help, anywhere before a literal --
	version bool          // -v or --version before any command
	json    bool          // --json anywhere before a literal --
	err     error         // an unknown command or a flag before the command that is not global
}

// argv is the line as urfave/cli is given it: global flags, the command's
// path, its flags, then its positional arguments, behind "--" when one of
// them starts with a dash.
func (l *commandLine) argv() []string {
	out := append([]string{"memvault"}, l.globals...)
	out = append(out, l.path...)
	out = append(out, l.flags...)
	for _, p := range l.args {
		if strings.HasPrefix(p, "-") && p != "-" {
			out = append(out, "--")
			break
		}
	}
	return append(out, l.args...)
}

// parseLine reads args (without the program name). Global flags are taken
// anywhere, before or after the command, unless the command has a flag of
// the same name (install's --vault), which then is the command's. A
// command's own flags may come before or after its arguments (`memvault
// commitment close ID --note x`): urfave/cli v2 stops at the first
// positional argument, so they are moved in front. A literal "--" ends the
// flags, for text that starts with a dash.
func parseLine(app *ucli.App, args []string) *commandLine {
	l := &commandLine{}
	cmds := app.Commands
	i := 0
	// The global flags and the command's names, in any order.
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if isFlag(a) {
			switch name := flagName(a); {
			case l.cmd != nil && lookupFlag(l.cmd.Flags, name) != nil:
				// The command's own flag: the second loop takes it.
			case lookupFlag(app.Flags, name) != nil:
				i = l.takeGlobal(app.Flags, args, i)
				continue
			case name == "help" || name == "h":
				l.help = true
				continue
			case (name == "version" || name == "v") && l.cmd == nil:
				l.version = true
				continue
			case name == "json" && l.cmd == nil:
				// --json before the command is the command's (or the
				// version's): "--json anywhere on the line".
				l.json = jsonOn(a)
				l.flags = append(l.flags, a)
				continue
			}
			if l.cmd == nil {
				l.err = unknownFlag("", a, app.Flags)
				return l
			}
			break
		}
		next := findCommand(cmds, a)
		if next == nil {
			if l.cmd == nil || len(l.cmd.Subcommands) > 0 && (l.cmd.Action == nil || closest(a, commandNames(l.cmd.Subcommands)) != "") {
				l.err = unknownCommand(l.path, a, cmds)
				return l
			}
			break
		}
		l.cmd = next
		l.path = append(l.path, next.Name)
		cmds = next.Subcommands
	}
	// The command's flags and arguments.
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			l.args = append(l.args, args[i+1:]...)
			break
		}
		if !isFlag(a) {
			l.args = append(l.args, a)
			continue
		}
		name := flagName(a)
		var own ucli.Flag
		if l.cmd != nil {
			own = lookupFlag(l.cmd.Flags, name)
		}
		switch {
		case own == nil && lookupFlag(app.Flags, name) != nil:
			i = l.takeGlobal(app.Flags, args, i)
			continue
		case own == nil && (name == "help" || name == "h"):
			l.help = true
			continue
		case name == "json":
			l.json = l.json || jsonOn(a)
		}
		l.flags = append(l.flags, a)
		if takesValue(own, a) && i+1 < len(args) {
			l.flags = append(l.flags, args[i+1])
			i++
		}
	}
	return l
}

// takeGlobal moves the global flag at args[i], and its value, to the
// globals, and returns the index of the last argument it took.
func (l *commandLine) takeGlobal(flags []ucli.Flag, args []string, i int) int {
	l.globals = append(l.globals, args[i])
	if takesValue(lookupFlag(flags, flagName(args[i])), args[i]) && i+1 < len(args) {
		l.globals = append(l.globals, args[i+1])
		i++
	}
	return i
}

// isFlag reports whether a looks like a flag: a dash and more, not "-"
// (standard input) or "--" (the end of the flags).
func isFlag(a string) bool { return strings.HasPrefix(a, "-") && a != "-" && a != "--" }

// flagName is the name a flag argument gives: "--kind=x" → "kind".
func flagName(a string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name
}

// jsonOn reports whether a --json argument asks for JSON: --json, or
// --json=true (strconv's forms); --json=false does not.
func jsonOn(a string) bool {
	_, v, ok := strings.Cut(a, "=")
	if !ok {
		return true
	}
	on, err := strconv.ParseBool(v)
	return err == nil && on
}

// lookupFlag finds the flag called name among flags, by any of its names.
func lookupFlag(flags []ucli.Flag, name string) ucli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func findCommand(cmds []*ucli.Command, name string) *ucli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether arg, an argument that names flag f, expects
// its value in the next argument ("--kind decision", not "--kind=decision"
// or "--json").
func takesValue(f ucli.Flag, arg string) bool {
	if f == nil || strings.Contains(arg, "=") {
		return false
	}
	_, isBool := f.(*ucli.BoolFlag)
	return !isBool
}

// oneID is the single event id a command takes.
func oneID(args []string, cmd string) (string, error) {
	if len(args) != 1 {
		return "", usagef("%s: want exactly one event id", cmd)
	}
	return args[0], nil
}

// threadArgs resolves thread keys or aliases.
func threadArgs(v *vault.Vault, args []string) ([]vault.Thread, error) {
	if len(args) == 0 {
		return nil, nil
	}
	cfg, err := heads.LoadHeadsConfig(v)
	if err != nil {
		return nil, err
	}
	var out []vault.Thread
	for _, a := range args {
		t, err := cfg.ResolveThread(a)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// noArgsHint says what to do instead, for the commands where a person is
// likely to type an argument.
func noArgsHint(path string) string {
	switch path {
	case "init":
		return "use --vault DIR to choose the folder"
	case "render":
		return "name threads with --thread"
	case "decide":
		return "memvault decide --decision D --rationale R"
	case "learn":
		return "memvault learn --error E --prevention P"
	}
	return "memvault help " + path + " shows its flags"
}
