package cli

import (
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
	limit int // the first N; 0 for all
	json  bool
}

type threadsShowOptions struct {
	arg  string // a thread key or alias
	json bool
}

func newThreadsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "threads",
		Usage: "list threads and the state of their heads",
		Flags: []ucli.Flag{limitFlag("threads, the first by key", 0), jsonFlag},
		Subcommands: []*ucli.Command{{
			Name:      "show",
			Usage:     "print a thread's head (rendered on the fly if it was never written)",
			ArgsUsage: "THREAD",
			Flags:     []ucli.Flag{jsonFlag},
		}},
	}
}

func runThreads(c *ucli.Context, v *vault.Vault) error {
	if c.NArg() > 0 {
		return usagef("threads: unknown subcommand %q; try memvault threads show T", c.Args().First())
	}
	limit, err := legacyListLimit(c)
	if err != nil {
		return err
	}
	opts := threadsOptions{limit: limit, json: c.Bool("json")}
	info, err := heads.Heads(v)
	if err != nil {
		return err
	}
	threads := first(info.Threads, opts.limit)
	if threads == nil {
		threads = []heads.ThreadInfo{}
	}
	limitNote(envOf(c), c.Bool("json"), len(threads), len(info.Threads), "threads", "first")
	if opts.json {
		return printJSON(c.App.Writer, threads)
	}
	for _, t := range threads {
		printThread(c.App.Writer, t)
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

func runThreadsShow(c *ucli.Context, v *vault.Vault) error {
	if c.NArg() != 1 {
		return usagef("threads show: want exactly one thread key or alias")
	}
	opts := threadsShowOptions{arg: c.Args().First(), json: c.Bool("json")}
	rel, thread, err := heads.ResolveHeadArg(v, opts.arg, false)
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
		fmt.Fprintf(c.App.ErrWriter, "note: %s is not written yet; this is a dry render (memvault render --thread %s writes it)\n", rel, thread)
	} else if err != nil {
		return err
	}
	if opts.json {
		return printJSON(c.App.Writer, map[string]any{"thread": thread, "head": rel.String(),
			"written": written, "content": string(data)})
	}
	_, err = c.App.Writer.Write(data)
	return err
}
