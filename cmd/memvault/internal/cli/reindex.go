package cli

import (
	"fmt"
	"time"

	"github.com/memvault/memvault/vault/recall"

	ucli "github.com/urfave/cli/v2"
)

type reindexOptions struct {
	json bool
}

func newReindexCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "reindex",
		Usage: "rebuild the search index from the files",
		Flags: []ucli.Flag{jsonFlag},
	}
}

// runReindex manages its own writes: recall.Reindex takes the vault lock
// while it rebuilds the index, and commits nothing.
func runReindex(c *ucli.Context) error {
	v, err := openVault(c)
	if err != nil {
		return err
	}
	opts := reindexOptions{json: c.Bool("json")}
	stop := startProgress(envOf(c), v, opts.json)
	defer stop()
	rep, err := recall.Reindex(v, nil)
	stop()
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(c.App.Writer, rep)
	}
	fmt.Fprintf(c.App.Writer, "indexed %d files: %d documents in %s\n", rep.Files, rep.Documents, rep.Elapsed.Round(time.Millisecond))
	return nil
}
