package cli

import (
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
	head   string // "" for MEMORY.md
	editor string // $VISUAL, else $EDITOR
	json   bool
}

func newEditCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "edit",
		Usage:     "edit MEMORY.md, CONTINUITY.md or a thread head in $VISUAL/$EDITOR under its lease; commits on save",
		ArgsUsage: "[MEMORY.md | CONTINUITY.md | THREAD]",
		Flags:     writeFlags(),
	}
}

func newEditOptions(c *ucli.Context) (editOptions, error) {
	if c.NArg() > 1 {
		return editOptions{}, usagef("edit: want at most one head: MEMORY.md, CONTINUITY.md or a thread")
	}
	opts := editOptions{head: c.Args().First(), editor: os.Getenv("VISUAL"), json: c.Bool("json")}
	if opts.editor == "" {
		opts.editor = os.Getenv("EDITOR")
	}
	if opts.editor == "" {
		return opts, &vault.Error{Class: vault.ErrInvalid, Msg: "edit: no editor: $VISUAL and $EDITOR are not set",
			Hint: "set one, for example: export EDITOR=vi"}
	}
	return opts, nil
}

// runEdit manages its own writes: heads.EditHead holds the head's lease
// while the editor runs (never the vault lock for that long), may first
// render and commit the head so there is something to edit, then commits
// the saved file in a transaction of its own.
func runEdit(c *ucli.Context) error {
	v, err := openVault(c)
	if err != nil {
		return err
	}
	opts, err := newEditOptions(c)
	if err != nil {
		return err
	}
	txOpts, err := txOptions(c, v)
	if err != nil {
		return err
	}
	res, err := heads.EditHead(v, heads.EditOptions{TxOptions: txOpts, Head: opts.head, Editor: runEditor(opts.editor),
		Template: continuity.Template()})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(c.App.Writer, res)
	}
	if !res.Changed {
		fmt.Fprintf(c.App.Writer, "%s: no change\n", res.Head)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "%s: edited (commit %s)\n", res.Head, vault.ShortHash(res.Commit))
	if len(res.Redacted) > 0 {
		kinds := slices.Sorted(maps.Keys(res.Redacted))
		fmt.Fprintf(c.App.ErrWriter, "memvault: warning: %s: your edit held a credential (%s); it was replaced by [REDACTED:…] in the file and never committed\n", res.Head, strings.Join(kinds, ", "))
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
