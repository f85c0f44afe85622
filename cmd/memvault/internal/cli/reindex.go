package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"
)

type reindexOptions struct {
	json     bool
	progress func(done, total int) // nil unless stderr is a terminal
}

func newReindexCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "reindex",
		Usage: "rebuild the search index from the files",
		Flags: []ucli.Flag{jsonFlag},
	}
}

// runReindex manages its own writes: vault.Reindex takes the vault lock
// while it rebuilds the index, and commits nothing.
func runReindex(c *ucli.Context) error {
	v, err := openVault(c)
	if err != nil {
		return err
	}
	opts := reindexOptions{json: c.Bool("json")}
	if f, ok := c.App.ErrWriter.(*os.File); ok && !opts.json {
		if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
			opts.progress = progressBar(f)
		}
	}
	rep, err := v.Reindex(opts.progress)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(c.App.Writer, rep)
	}
	fmt.Fprintf(c.App.Writer, "indexed %d files: %d documents in %s\n", rep.Files, rep.Documents, rep.Elapsed.Round(time.Millisecond))
	return nil
}

// progressBar redraws a bar on the terminal every 50 files.
func progressBar(f *os.File) func(done, total int) {
	return func(done, total int) {
		if done == total || done%50 == 0 {
			width := 30
			filled := width * done / max(total, 1)
			fmt.Fprintf(f, "\rindexing [%s%s] %d/%d files", strings.Repeat("#", filled), strings.Repeat(" ", width-filled), done, total)
			if done == total {
				fmt.Fprintln(f)
			}
		}
	}
}
