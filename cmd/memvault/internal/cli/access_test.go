package cli

import (
	"io"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// TestEveryCommandDeclaresAccess walks the command tree: every command that
// runs (a leaf, or a group with an action of its own) has an entry in
// commandActions, so the root knows whether to open the vault, run it in
// one transaction, or leave the locking to the library; and every entry
// names a real command.
func TestEveryCommandDeclaresAccess(t *testing.T) {
	actions := commandActions()
	seen := map[string]bool{}
	var walk func(prefix string, cs []*ucli.Command)
	walk = func(prefix string, cs []*ucli.Command) {
		for _, c := range cs {
			path := prefix + c.Name
			seen[path] = true
			_, declared := actions[path]
			if len(c.Subcommands) == 0 && !declared {
				t.Errorf("memvault %s declares no vault access: add it to commandActions", path)
			}
			if declared && c.Action == nil {
				t.Errorf("memvault %s is declared but the root gave it no action", path)
			}
			walk(path+" ", c.Subcommands)
		}
	}
	walk("", newApp(nil, io.Discard, io.Discard).Commands)
	cmds := everyCommand()
	for path, a := range actions {
		// The positional arguments reach the options of exactly the
		// commands whose usage names some (the root refuses them for
		// the others: withoutArgs).
		if takes := strings.TrimSpace(cmds[path].ArgsUsage) != ""; takes != (a.args != nil) {
			t.Errorf("memvault %s: usage %q, but its options take arguments: %v", path, cmds[path].ArgsUsage, a.args != nil)
		}
		if !seen[path] {
			t.Errorf("commandActions declares %q, which is not a command", path)
		}
		if a.access == accessTx && a.tx == nil || a.access == accessRead && a.read == nil ||
			(a.access == accessNone || a.access == accessOwn || a.access == accessServe) && a.plain == nil {
			t.Errorf("memvault %s: its action has no function for its access", path)
		}
	}
}
