package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/memvault/memvault/vault/heads"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type threadsOptions struct {
	limitOptions // the first N; 0 for all
	json         bool
}

type threadsShowOptions struct {
	json bool
	args []string // a thread key or alias
}

func newThreadsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "threads",
		Usage: "list threads and the state of their heads",
		Subcommands: []*ucli.Command{{
			Name:      "show",
			Usage:     "print a thread's head (rendered on the fly if it was never written)",
			ArgsUsage: "THREAD",
		}},
	}
}

func (o *threadsOptions) flags() []ucli.Flag {
	return []ucli.Flag{o.limitFlag("threads, the first by key", 0), newJSONFlag(&o.json)}
}

func (o *threadsShowOptions) flags() []ucli.Flag { return []ucli.Flag{newJSONFlag(&o.json)} }

func (o *threadsShowOptions) setArgs(args []string) { o.args = args }

func runThreads(_ context.Context, opts threadsOptions, e env, v *vault.Vault) error {
	limit, err := opts.listLimit(e, opts.json)
	if err != nil {
		return err
	}
	info, err := heads.Heads(v)
	if err != nil {
		return err
	}
	threads := first(info.Threads, limit)
	if threads == nil {
		threads = []heads.ThreadInfo{}
	}
	limitNote(e, opts.json, len(threads), len(info.Threads), "threads", "first")
	emptyNote(e, opts.json, len(info.Threads), "no threads yet: a row written in a project folder, or with --thread kind:slug, starts one")
	if opts.json {
		return printJSON(e.stdout, threads)
	}
	for _, t := range threads {
		printThread(e.stdout, t)
	}
	return nil
}

func printThread(w io.Writer, t heads.ThreadInfo) {
	var parts []string
	parts = append(parts, fmt.Sprintf("%d rows", t.Rows))
	if t.Open > 0 {
		parts = append(parts, fmt.Sprintf("%d open", t.Open))
	}
	if t.Blockers > 0 {
		parts = append(parts, fmt.Sprintf("%d blocked", t.Blockers))
	}
	line := fmt.Sprintf("%-24s %-12s %s", t.Key, t.HeadState, strings.Join(parts, ", "))
	if len(t.Aliases) > 0 {
		line += "  aliases: " + strings.Join(t.Aliases, ", ")
	}
	fmt.Fprintln(w, line)
}

func runThreadsShow(_ context.Context, opts threadsShowOptions, e env, v *vault.Vault) error {
	if len(opts.args) != 1 {
		return usagef("threads show: want exactly one thread key or alias")
	}
	rel, thread, err := heads.ResolveHeadArg(v, opts.args[0], false)
	if err != nil {
		return err
	}
	if thread == "" {
		return usagef("threads show: %s is not a thread; read it with cat, or memvault render --dry-run", rel)
	}
	data, err := v.ReadFile(rel.String())
	written := err == nil
	if errors.Is(err, os.ErrNotExist) {
		th, _ := vault.ParseThread(thread)
		docs, rerr := heads.RenderHeads(v, heads.RenderOptions{Threads: []vault.Thread{th}})
		if rerr != nil {
			return rerr
		}
		data = docs[0].Bytes
		fmt.Fprintf(e.stderr, "note: %s is not written yet; this is a dry render (memvault render --thread %s writes it)\n", rel, thread)
	} else if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, map[string]any{"thread": thread, "head": rel.String(),
			"written": written, "content": string(data)})
	}
	_, err = e.stdout.Write(data)
	return err
}
