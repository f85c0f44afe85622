package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/memvault/memvault/vault/recall"

	ucli "github.com/urfave/cli/v2"
)

type reindexOptions struct{ jsonOnly }

func newReindexCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "reindex",
		Usage: "rebuild the search index from the files",
	}
}

// runReindex manages its own writes: recall.Reindex takes the vault lock
// while it rebuilds the index, and commits nothing.
func runReindex(_ context.Context, opts reindexOptions, e env) error {
	v, err := e.openVault()
	if err != nil {
		return err
	}
	stop := startProgress(e, v, opts.json)
	defer stop()
	rep, err := recall.Reindex(v, nil)
	stop()
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, rep)
	}
	fmt.Fprintf(e.stdout, "indexed %d files: %d documents in %s\n", rep.Files, rep.Documents, rep.Elapsed.Round(time.Millisecond))
	return nil
}
