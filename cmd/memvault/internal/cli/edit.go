package cli

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"

	ucli "github.com/urfave/cli/v2"
)

type editOptions struct {
	writeOptions
	args []string // the head: MEMORY.md, CONTINUITY.md or a thread; none for MEMORY.md
}

func newEditCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "edit",
		Usage:     "edit MEMORY.md, CONTINUITY.md or a thread head in $VISUAL/$EDITOR under its lease; commits on save",
		ArgsUsage: "[MEMORY.md | CONTINUITY.md | THREAD]",
	}
}

func (o *editOptions) flags() []ucli.Flag { return o.writeFlags() }

func (o *editOptions) setArgs(args []string) { o.args = args }

// editor is the head to edit and the editor to edit it with: $VISUAL,
// else $EDITOR.
func (o editOptions) editor() (head, editor string, err error) {
	if len(o.args) > 1 {
		return "", "", usagef("edit: want at most one head: MEMORY.md, CONTINUITY.md or a thread")
	}
	head, editor = firstArg(o.args), os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		return head, "", &vault.Error{Class: vault.ErrInvalid, Msg: "edit: no editor: $VISUAL and $EDITOR are not set",
			Hint: "set one, for example: export EDITOR=vi"}
	}
	return head, editor, nil
}

// runEdit manages its own writes: heads.EditHead holds the head's lease
// while the editor runs (never the vault lock for that long), may first
// render and commit the head so there is something to edit, then commits
// the saved file in a transaction of its own.
func runEdit(_ context.Context, opts editOptions, e env) error {
	v, err := e.openVault()
	if err != nil {
		return err
	}
	head, editor, err := opts.editor()
	if err != nil {
		return err
	}
	txOpts, err := e.txOptions(v, opts.writeOptions)
	if err != nil {
		return err
	}
	res, err := heads.EditHead(v, heads.EditOptions{TxOptions: txOpts, Head: head, Editor: runEditor(editor),
		Template: continuity.Template()})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, res)
	}
	if !res.Changed {
		fmt.Fprintf(e.stdout, "%s: no change\n", res.Head)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s: edited (commit %s)\n", res.Head, vault.ShortHash(res.Commit))
	if len(res.Redacted) > 0 {
		kinds := slices.Sorted(maps.Keys(res.Redacted))
		fmt.Fprintf(e.stderr, "memvault: warning: %s: your edit held a credential (%s); it was replaced by [REDACTED:…] in the file and never committed\n", res.Head, strings.Join(kinds, ", "))
	}
	return nil
}

// runEditor runs the editor command through sh, on the terminal.
func runEditor(editor string) func(path string) error {
	return func(path string) error {
		cmd := exec.Command("sh", "-c", editor+` "$@"`, "sh", path)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return &vault.Error{Class: vault.ErrInvalid, Msg: fmt.Sprintf("edit: the editor failed (%v); nothing was changed", err),
				Hint: "check $VISUAL / $EDITOR; the editor must exit 0 when you save"}
		}
		return nil
	}
}
