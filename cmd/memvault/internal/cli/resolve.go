package cli

import (
	"context"
	"fmt"

	"github.com/memvault/memvault/vault/heads"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type resolveOptions struct {
	writeOptions
	theirs, ours bool
	args         []string // the head; none for every head in conflict
}

func newResolveCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "resolve",
		Usage:     "settle head conflicts: keep the file's text (default) or take the render's",
		ArgsUsage: "[MEMORY.md | CONTINUITY.md | THREAD]",
	}
}

func (o *resolveOptions) flags() []ucli.Flag {
	return o.writeFlags(
		&ucli.BoolFlag{Name: "theirs", Usage: "replace each conflicted section with the render's version", Destination: &o.theirs},
		&ucli.BoolFlag{Name: "ours", Usage: "keep the file as it is (the default)", Destination: &o.ours},
	)
}

func (o *resolveOptions) setArgs(args []string) { o.args = args }

// take is the head to settle ("" for every head in conflict) and the
// side to take: ours or theirs.
func (o resolveOptions) take() (head, take string, err error) {
	if len(o.args) > 1 {
		return "", "", usagef("resolve: want at most one head")
	}
	if o.ours && o.theirs {
		return "", "", usagef("resolve: --ours and --theirs exclude each other")
	}
	take = "ours"
	if o.theirs {
		take = "theirs"
	}
	return firstArg(o.args), take, nil
}

// runResolve manages its own writes: heads.ResolveHeads takes the leases of
// the heads it settles before its own transaction, so the lease comes
// before the vault lock as everywhere in the heads.
func runResolve(_ context.Context, opts resolveOptions, e env) error {
	v, err := e.openVault()
	if err != nil {
		return err
	}
	head, take, err := opts.take()
	if err != nil {
		return err
	}
	txOpts, err := e.txOptions(v, opts.writeOptions)
	if err != nil {
		return err
	}
	res, err := heads.ResolveHeads(v, head, take, txOpts)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, res)
	}
	for _, r := range res {
		kept := "kept the file's text"
		if r.Take == "theirs" {
			kept = "took the render's text"
		}
		fmt.Fprintf(e.stdout, "%s: %d conflict(s) resolved, %s (commit %s)\n", r.Head, len(r.Resolved), kept, vault.ShortHash(r.Commit))
	}
	return nil
}
