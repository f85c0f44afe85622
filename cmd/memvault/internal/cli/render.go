package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"

	ucli "github.com/urfave/cli/v2"
)

type renderOptions struct {
	writeOptions
	head       bool     // MEMORY.md
	threads    []string // thread heads, by key or alias
	allThreads bool
	explain    bool
	dryRun     bool
	at         string // a commit to render as of
}

// renderPlan is what render renders: the options with the threads
// resolved and the defaults applied.
type renderPlan struct {
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
	}
}

func (o *renderOptions) flags() []ucli.Flag {
	return o.writeFlags(
		&ucli.BoolFlag{Name: "head", Usage: "MEMORY.md (the default when no thread is named)", Destination: &o.head},
		&ucli.StringSliceFlag{Name: "thread", Aliases: []string{"t"}, Usage: "a thread head, by key or alias (repeatable)", Action: setSlice(&o.threads)},
		&ucli.BoolFlag{Name: "all-threads", Usage: "every thread head", Destination: &o.allThreads},
		&ucli.BoolFlag{Name: "explain", Usage: "say what the budget left out and why", Destination: &o.explain},
		&ucli.BoolFlag{Name: "dry-run", Usage: "print the render; write nothing", Destination: &o.dryRun},
		&ucli.StringFlag{Name: "at", Usage: "render as of this commit (a hash, HEAD~N); implies --dry-run", Destination: &o.at},
	)
}

// plan resolves the threads and applies the defaults.
func (o renderOptions) plan(v *vault.Vault) (renderPlan, error) {
	threads, err := threadArgs(v, o.threads)
	if err != nil {
		return renderPlan{}, err
	}
	p := renderPlan{threads: threads, allThreads: o.allThreads, explain: o.explain, at: o.at, json: o.json}
	if len(threads) > 0 && p.allThreads {
		return p, usagef("render: --thread and --all-threads exclude each other")
	}
	p.memory = o.head || (len(threads) == 0 && !p.allThreads)
	p.dryRun = o.dryRun || p.at != ""
	return p, nil
}

// runRender manages its own writes: heads.Refresh takes each head's lease
// and the vault lock itself and commits the heads it wrote. A dry run
// writes nothing.
func runRender(_ context.Context, opts renderOptions, e env) error {
	v, err := e.openVault()
	if err != nil {
		return err
	}
	p, err := opts.plan(v)
	if err != nil {
		return err
	}
	if p.dryRun {
		return renderDry(e.stdout, v, p)
	}
	txOpts, err := e.txOptions(v, opts.writeOptions)
	if err != nil {
		return err
	}
	rep, err := heads.Refresh(v, heads.RefreshOptions{TxOptions: txOpts, Trigger: "render", Memory: p.memory,
		Threads: p.threads, AllThreads: p.allThreads, Explain: p.explain, Protocol: continuity.RefreshHead})
	if err != nil {
		return err
	}
	return printRefresh(e, opts.json, rep, p.explain)
}

// renderDry prints the render without writing it: as JSON, as the budget
// report, or as the files themselves.
func renderDry(w io.Writer, v *vault.Vault, opts renderPlan) error {
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
