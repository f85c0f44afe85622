package cli

import (
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// interspersed moves a command's flags in front of its positional arguments,
// so that `memvault commitment close ID --note x` works as people type it:
// urfave/cli v2 stops parsing flags at the first positional argument. A
// literal "--" still ends flag parsing, for text that starts with a dash.
func interspersed(app *ucli.App, args []string) []string {
	out := make([]string, 0, len(args)+1)
	i := 0
	// Global flags before the command name stay where they are.
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-" && args[i] != "--" {
		out = append(out, args[i])
		if takesValue(app.Flags, args[i]) && i+1 < len(args) {
			out = append(out, args[i+1])
			i++
		}
		i++
	}
	cmds := app.Commands
	var cmd *ucli.Command
	for i < len(args) {
		next := findCommand(cmds, args[i])
		if next == nil {
			break
		}
		cmd = next
		out = append(out, args[i])
		i++
		cmds = cmd.Subcommands
	}
	if cmd == nil {
		return append(out, args[i:]...)
	}
	var flags, pos []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			flags = append(flags, a)
			if takesValue(cmd.Flags, a) && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	out = append(out, flags...)
	for _, p := range pos {
		if strings.HasPrefix(p, "-") && p != "-" {
			out = append(out, "--")
			break
		}
	}
	return append(out, pos...)
}

func findCommand(cmds []*ucli.Command, name string) *ucli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether arg is a flag in flags that expects a separate
// value argument ("--kind decision", not "--kind=decision" or "--json").
func takesValue(flags []ucli.Flag, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	if strings.Contains(name, "=") {
		return false
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			_, isBool := f.(*ucli.BoolFlag)
			return !isBool
		}
	}
	return false
}
