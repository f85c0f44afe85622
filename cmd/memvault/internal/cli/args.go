package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

// Reading what people type: flags moved in front of positional arguments,
// texts, ids, dates and thread names.

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

// textArg joins the positional arguments into one text; "-" reads stdin.
func textArg(c *ucli.Context, what string) (string, error) {
	args := c.Args().Slice()
	if len(args) == 1 && args[0] == "-" {
		data, err := io.ReadAll(io.LimitReader(c.App.Reader, vault.MaxTextBytes+1))
		if err != nil {
			return "", fmt.Errorf("%s: read stdin: %w", what, err)
		}
		return strings.TrimSuffix(string(data), "\n"), nil
	}
	return strings.Join(args, " "), nil
}

// oneID is the single event id a command takes.
func oneID(c *ucli.Context, cmd string) (string, error) {
	if c.NArg() != 1 {
		return "", usagef("%s: want exactly one event id", cmd)
	}
	return c.Args().First(), nil
}

func noArgs(c *ucli.Context, cmd string) error {
	if c.NArg() > 0 {
		return usagef("%s: takes no arguments", cmd)
	}
	return nil
}

// parseSince accepts a date, an RFC 3339 time, or an age such as 7d or 12h.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 {
			return now.AddDate(0, 0, -days), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usagef("since %q: want a date (2026-11-22), an RFC 3339 time, or an age (7d, 12h)", s)
}

// threadArgs resolves thread keys or aliases.
func threadArgs(v *vault.Vault, args []string) ([]vault.Thread, error) {
	if len(args) == 0 {
		return nil, nil
	}
	cfg, err := v.HeadsConfig()
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
