package cli

import (
	"fmt"
	"io"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"

	ucli "github.com/urfave/cli/v2"
)

type renderOptions struct {
	memory     bool // MEMORY.md
	threads    []vault.Thread
	allThreads bool
	explain    bool
	dryRun     bool // also when --at names a commit
	at         string
	json       bool
}

func newRenderCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "render",
		Usage: "render MEMORY.md and thread heads from the ledger, merged with hand edits",
		Description: "Without --head, --thread or --all-threads, renders MEMORY.md. Writes and commits the heads\n" +
			"(under their leases, merging hand edits) unless --dry-run, which prints the render instead.\n" +
			"--at COMMIT renders the vault as it was at that commit and implies --dry-run.",
		Flags: writeFlags(
			&ucli.BoolFlag{Name: "head", Usage: "MEMORY.md (the default when no thread is named)"},
			&ucli.StringSliceFlag{Name: "thread", Aliases: []string{"t"}, Usage: "a thread head, by key or alias (repeatable)"},
			&ucli.BoolFlag{Name: "all-threads", Usage: "every thread head"},
			&ucli.BoolFlag{Name: "explain", Usage: "say what the budget left out and why"},
			&ucli.BoolFlag{Name: "dry-run", Usage: "print the render; write nothing"},
			&ucli.StringFlag{Name: "at", Usage: "render as of this commit (a hash, HEAD~N); implies --dry-run"},
		),
	}
}

func newRenderOptions(c *ucli.Context, v *vault.Vault) (renderOptions, error) {
	threads, err := threadArgs(v, c.StringSlice("thread"))
	if err != nil {
		return renderOptions{}, err
	}
	opts := renderOptions{threads: threads, allThreads: c.Bool("all-threads"), explain: c.Bool("explain"),
		at: c.String("at"), json: c.Bool("json")}
	if len(threads) > 0 && opts.allThreads {
		return opts, usagef("render: --thread and --all-threads exclude each other")
	}
	opts.memory = c.Bool("head") || (len(threads) == 0 && !opts.allThreads)
	opts.dryRun = c.Bool("dry-run") || opts.at != ""
	return opts, nil
}

// runRender manages its own writes: heads.Refresh takes each head's lease
// and the vault lock itself and commits the heads it wrote. A dry run
// writes nothing.
func runRender(c *ucli.Context) error {
	v, err := openVault(c)
	if err != nil {
		return err
	}
	opts, err := newRenderOptions(c, v)
	if err != nil {
		return err
	}
	if opts.dryRun {
		return renderDry(c.App.Writer, v, opts)
	}
	txOpts, err := txOptions(c, v)
	if err != nil {
		return err
	}
	rep, err := heads.Refresh(v, heads.RefreshOptions{TxOptions: txOpts, Trigger: "render", Memory: opts.memory,
		Threads: opts.threads, AllThreads: opts.allThreads, Explain: opts.explain, Protocol: continuity.RefreshHead})
	if err != nil {
		return err
	}
	return printRefresh(c, rep, opts.explain)
}

// renderDry prints the render without writing it: as JSON, as the budget
// report, or as the files themselves.
func renderDry(w io.Writer, v *vault.Vault, opts renderOptions) error {
	docs, err := heads.RenderHeads(v, heads.RenderOptions{Memory: opts.memory, Threads: opts.threads,
		AllThreads: opts.allThreads, At: opts.at, Explain: opts.explain || opts.json})
	if err != nil {
		return err
	}
	switch {
	case opts.json:
		type out struct {
			Path    string        `json:"path"`
			Content string        `json:"content"`
			Report  render.Report `json:"report"`
		}
		list := []out{}
		for _, d := range docs {
			list = append(list, out{Path: d.Path, Content: string(d.Bytes), Report: d.Report})
		}
		return printJSON(w, list)
	case opts.explain:
		for _, d := range docs {
			printExplain(w, &d.Report)
		}
	case len(docs) == 1:
		_, err := w.Write(docs[0].Bytes)
		return err
	default:
		for i, d := range docs {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "==> %s <==\n", d.Path)
			w.Write(d.Bytes)
		}
	}
	return nil
}
