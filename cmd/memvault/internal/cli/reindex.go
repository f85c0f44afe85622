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
	if err != nil {
		stop()
		return err
	}
	// The vectors of semantic search, with [embed]: rebuilt, those of
	// unchanged texts reused; an endpoint that fails leaves the index
	// rebuilt and says so.
	v.Progress.Step("reindex: embedding", "", 0, 0)
	emb, embErr := recall.CatchUpEmbeddings(context.Background(), v, 0, true)
	stop()
	if opts.json {
		out := struct {
			*recall.IndexReport
			Embed *recall.EmbedReport `json:"embed,omitempty"`
		}{IndexReport: rep}
		if emb.Configured {
			out.Embed = &emb
		}
		if err := printJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "indexed %d files: %d documents in %s\n", rep.Files, rep.Documents, rep.Elapsed.Round(time.Millisecond))
		if emb.Configured && embErr == nil {
			fmt.Fprintf(e.stdout, "embedded %d documents (%d reused, %d requests): %d vectors in %s\n", emb.Embedded, emb.Reused,
				emb.Requests, emb.Vectors, emb.Elapsed.Round(time.Millisecond))
		}
	}
	if embErr != nil {
		return fmt.Errorf("reindex: the index is rebuilt, the vectors are not: %w", embErr)
	}
	return nil
}
