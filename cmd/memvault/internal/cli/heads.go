package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
)

func renderCommand() *ucli.Command {
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
			&ucli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print the render; write nothing"},
			&ucli.StringFlag{Name: "at", Usage: "render as of this commit (a hash, HEAD~N); implies --dry-run"},
		),
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			if c.NArg() > 0 {
				return usagef("render: takes no arguments; name threads with --thread")
			}
			threads, err := threadArgs(v, c.StringSlice("thread"))
			if err != nil {
				return err
			}
			if len(threads) > 0 && c.Bool("all-threads") {
				return usagef("render: --thread and --all-threads exclude each other")
			}
			memory := c.Bool("head") || (len(threads) == 0 && !c.Bool("all-threads"))
			w := c.App.Writer
			if c.Bool("dry-run") || c.String("at") != "" {
				docs, err := v.RenderHeads(vault.RenderOptions{Memory: memory, Threads: threads,
					AllThreads: c.Bool("all-threads"), At: c.String("at"), Explain: c.Bool("explain") || c.Bool("json")})
				if err != nil {
					return err
				}
				switch {
				case c.Bool("json"):
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
				case c.Bool("explain"):
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
			opts, err := txOptions(c, v)
			if err != nil {
				return err
			}
			rep, err := v.Refresh(vault.RefreshOptions{TxOptions: opts, Trigger: "render", Memory: memory,
				Threads: threads, AllThreads: c.Bool("all-threads"), Explain: c.Bool("explain")})
			if err != nil {
				return err
			}
			return printRefresh(c, rep, c.Bool("explain"))
		}),
	}
}

func refreshCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "refresh",
		Usage: "what hooks call: refresh MEMORY.md and the thread heads that changed, and retry deferred refreshes",
		Description: "--on session-end|compaction names the event. MEMORY.md is always refreshed; thread heads\n" +
			"are refreshed when their rows changed since their last render (with --session, only the\n" +
			"threads that session wrote to). A head whose lease is held by someone else is deferred:\n" +
			"recorded as head.deferred and retried by the next refresh of any session.",
		Flags: writeFlags(
			&ucli.StringFlag{Name: "on", Usage: "the event: session-end or compaction (required)"},
		),
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			if c.NArg() > 0 {
				return usagef("refresh: takes no arguments")
			}
			on := c.String("on")
			switch on {
			case "session-end", "compaction":
			case "":
				return usagef("refresh: --on is required: session-end or compaction")
			default:
				return usagef("refresh: --on %q: want session-end or compaction", on)
			}
			opts, err := txOptions(c, v)
			if err != nil {
				return err
			}
			rep, err := v.Refresh(vault.RefreshOptions{TxOptions: opts, Trigger: on, Memory: true, Affected: true})
			if err != nil {
				return err
			}
			return printRefresh(c, rep, false)
		}),
	}
}

func printRefresh(c *ucli.Context, rep *vault.RefreshReport, explain bool) error {
	for _, w := range rep.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "memvault: warning: %s\n", w)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, rep)
	}
	w := c.App.Writer
	for _, h := range rep.Heads {
		line := h.Head + ": " + h.Status
		switch {
		case h.Status == "deferred":
			line += ": lease held by " + h.Holder.String() + "; the next refresh retries it"
		case h.Status == "conflict":
			line += " in " + strings.Join(h.Sections, "; ") + ": your text was kept; see memvault status, settle with memvault resolve"
		}
		if h.HandEdits {
			line += " (your uncommitted edit was committed first)"
		}
		if len(h.Retried) > 0 {
			line += fmt.Sprintf(" (retried %d deferred)", len(h.Retried))
		}
		if h.Takeover != nil {
			line += " (took over a lease: " + h.Takeover.Reason + ")"
		}
		fmt.Fprintln(w, line)
	}
	if rep.Commit != "" {
		fmt.Fprintf(w, "commit %s\n", vault.ShortHash(rep.Commit))
	}
	if explain {
		for _, h := range rep.Heads {
			if h.Report != nil {
				printExplain(w, h.Report)
			}
		}
	}
	return nil
}

func threadsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "threads",
		Usage: "list threads and the state of their heads",
		Flags: []ucli.Flag{jsonFlag},
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			if c.NArg() > 0 {
				return usagef("threads: unknown subcommand %q; try memvault threads show T", c.Args().First())
			}
			info, err := v.Heads()
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, info.Threads)
			}
			w := c.App.Writer
			for _, t := range info.Threads {
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
			return nil
		}),
		Subcommands: []*ucli.Command{{
			Name:      "show",
			Usage:     "print a thread's head (rendered on the fly if it was never written)",
			ArgsUsage: "THREAD",
			Flags:     []ucli.Flag{jsonFlag},
			Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
				if c.NArg() != 1 {
					return usagef("threads show: want exactly one thread key or alias")
				}
				rel, thread, err := v.ResolveHeadArg(c.Args().First(), false)
				if err != nil {
					return err
				}
				if thread == "" {
					return usagef("threads show: %s is not a thread; read it with cat, or memvault render --dry-run", rel)
				}
				data, err := os.ReadFile(v.Root + "/" + rel.String())
				written := err == nil
				if errors.Is(err, os.ErrNotExist) {
					th, _ := vault.ParseThread(thread)
					docs, rerr := v.RenderHeads(vault.RenderOptions{Threads: []vault.Thread{th}})
					if rerr != nil {
						return rerr
					}
					data = docs[0].Bytes
					fmt.Fprintf(c.App.ErrWriter, "note: %s is not written yet; this is a dry render (memvault render --thread %s writes it)\n", rel, thread)
				} else if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, map[string]any{"thread": thread, "head": rel.String(),
						"written": written, "content": string(data)})
				}
				_, err = c.App.Writer.Write(data)
				return err
			}),
		}},
	}
}

func editCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "edit",
		Usage:     "edit MEMORY.md, CONTINUITY.md or a thread head in $VISUAL/$EDITOR under its lease; commits on save",
		ArgsUsage: "[MEMORY.md | CONTINUITY.md | THREAD]",
		Flags:     writeFlags(),
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			if c.NArg() > 1 {
				return usagef("edit: want at most one head: MEMORY.md, CONTINUITY.md or a thread")
			}
			editor := os.Getenv("VISUAL")
			if editor == "" {
				editor = os.Getenv("EDITOR")
			}
			if editor == "" {
				return &vault.Error{Class: vault.ErrInvalid, Msg: "edit: no editor: $VISUAL and $EDITOR are not set",
					Hint: "set one, for example: export EDITOR=vi"}
			}
			opts, err := txOptions(c, v)
			if err != nil {
				return err
			}
			res, err := v.EditHead(vault.EditOptions{TxOptions: opts, Head: c.Args().First(), Editor: func(path string) error {
				cmd := exec.Command("sh", "-c", editor+` "$@"`, "sh", path)
				cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
				if err := cmd.Run(); err != nil {
					return &vault.Error{Class: vault.ErrInvalid, Msg: fmt.Sprintf("edit: the editor failed (%v); nothing was changed", err),
						Hint: "check $VISUAL / $EDITOR; the editor must exit 0 when you save"}
				}
				return nil
			}})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, res)
			}
			if !res.Changed {
				fmt.Fprintf(c.App.Writer, "%s: no change\n", res.Head)
				return nil
			}
			fmt.Fprintf(c.App.Writer, "%s: edited (commit %s)\n", res.Head, vault.ShortHash(res.Commit))
			return nil
		}),
	}
}

func resolveCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "resolve",
		Usage:     "settle head conflicts: keep the file's text (default) or take the render's",
		ArgsUsage: "[MEMORY.md | THREAD]",
		Flags: writeFlags(
			&ucli.BoolFlag{Name: "theirs", Usage: "replace each conflicted section with the render's version"},
			&ucli.BoolFlag{Name: "ours", Usage: "keep the file as it is (the default)"},
		),
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			if c.NArg() > 1 {
				return usagef("resolve: want at most one head")
			}
			if c.Bool("ours") && c.Bool("theirs") {
				return usagef("resolve: --ours and --theirs exclude each other")
			}
			take := "ours"
			if c.Bool("theirs") {
				take = "theirs"
			}
			opts, err := txOptions(c, v)
			if err != nil {
				return err
			}
			res, err := v.ResolveHeads(c.Args().First(), take, opts)
			if err != nil {
				return err
			}
			if c.Bool("json") {
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
		}),
	}
}
