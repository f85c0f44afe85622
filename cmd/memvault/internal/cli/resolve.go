package cli

import (
	"fmt"

	"github.com/memvault/memvault/vault/heads"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type resolveOptions struct {
	head string // "" for every head in conflict
	take string // ours or theirs
	json bool
}

func newResolveCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "resolve",
		Usage:     "settle head conflicts: keep the file's text (default) or take the render's",
		ArgsUsage: "[MEMORY.md | CONTINUITY.md | THREAD]",
		Flags: writeFlags(
			&ucli.BoolFlag{Name: "theirs", Usage: "replace each conflicted section with the render's version"},
			&ucli.BoolFlag{Name: "ours", Usage: "keep the file as it is (the default)"},
		),
	}
}

func newResolveOptions(c *ucli.Context) (resolveOptions, error) {
	if c.NArg() > 1 {
		return resolveOptions{}, usagef("resolve: want at most one head")
	}
	if c.Bool("ours") && c.Bool("theirs") {
		return resolveOptions{}, usagef("resolve: --ours and --theirs exclude each other")
	}
	opts := resolveOptions{head: c.Args().First(), take: "ours", json: c.Bool("json")}
	if c.Bool("theirs") {
		opts.take = "theirs"
	}
	return opts, nil
}

// runResolve manages its own writes: heads.ResolveHeads takes the leases of
// the heads it settles before its own transaction, so the lease comes
// before the vault lock as everywhere in the heads.
func runResolve(c *ucli.Context) error {
	v, err := openVault(c)
	if err != nil {
		return err
	}
	opts, err := newResolveOptions(c)
	if err != nil {
		return err
	}
	txOpts, err := txOptions(c, v)
	if err != nil {
		return err
	}
	res, err := heads.ResolveHeads(v, opts.head, opts.take, txOpts)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(c.App.Writer, res)
	}
	for _, r := range res {
		kept := "kept the file's text"
		if r.Take == "theirs" {
			kept = "took the render's text"
		}
		fmt.Fprintf(c.App.Writer, "%s: %d conflict(s) resolved, %s (commit %s)\n", r.Head, len(r.Resolved), kept, vault.ShortHash(r.Commit))
	}
	return nil
}
