package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

func recallCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "recall",
		Usage:     "search memory: structured rows, then heads and nodes, then transcripts",
		ArgsUsage: "QUERY | -",
		Flags: []ucli.Flag{jsonFlag,
			&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, EnvVars: []string{"MEMVAULT_THREAD"}, Usage: "the current thread (default: the session's)"},
			&ucli.BoolFlag{Name: "all-threads", Usage: "search every thread"},
			&ucli.StringFlag{Name: "session", EnvVars: []string{"MEMVAULT_SESSION"}, Usage: "the current session, whose thread is the default"},
			&ucli.StringFlag{Name: "tier", Usage: "only one tier: structured, heads or transcripts"},
			&ucli.StringFlag{Name: "since", Usage: "only what was written at or after DATE"},
			&ucli.StringFlag{Name: "until", Usage: "only what was written before DATE"},
			&ucli.IntFlag{Name: "limit", Aliases: []string{"n"}, Value: 5, Usage: "hits per tier"},
		},
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			agent, err := agentOf(c, v)
			if err != nil {
				return err
			}
			if c.Bool("all-threads") && c.IsSet("thread") && c.String("thread") != "" && !envSet("MEMVAULT_THREAD") {
				return usagef("recall: --thread and --all-threads do not go together")
			}
			if c.Int("limit") < 1 {
				return usagef("recall: --limit must be 1 or more")
			}
			query, err := textArg(c, "recall")
			if err != nil {
				return err
			}
			opts := vault.RecallOptions{Query: query, Agent: agent,
				Thread: c.String("thread"), Session: c.String("session"), AllThreads: c.Bool("all-threads"),
				Tier: c.String("tier"), Limit: c.Int("limit")}
			if c.Bool("all-threads") {
				opts.Thread = ""
			}
			now := time.Now()
			if s := c.String("since"); s != "" {
				if opts.Since, err = parseSince(s, now); err != nil {
					return err
				}
			}
			if s := c.String("until"); s != "" {
				if opts.Until, err = parseSince(s, now); err != nil {
					return err
				}
			}
			res, err := v.Recall(opts)
			if err != nil {
				return err
			}
			for _, n := range res.Notes {
				fmt.Fprintf(c.App.ErrWriter, "memvault: note: %s\n", n)
			}
			if res.Excluded > 0 {
				fmt.Fprintf(c.App.ErrWriter, "memvault: note: %d hits in other threads left out (scope: %s); --all-threads or --thread T includes them\n",
					res.Excluded, scopeText(res.Scope))
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, res.Hits)
			}
			tier := ""
			for _, h := range res.Hits {
				if h.Tier != tier {
					tier = h.Tier
					fmt.Fprintf(c.App.Writer, "%s\n", tier)
				}
				where := h.Source.File
				if h.Source.Line > 0 {
					where += fmt.Sprintf(":%d", h.Source.Line)
				}
				thread := h.Thread
				if thread == "" {
					thread = "-"
				}
				fmt.Fprintf(c.App.Writer, "  %s  %s  %s  %s\n      %s\n", h.ID, h.Kind, thread, where, h.Text)
			}
			if len(res.Hits) == 0 {
				fmt.Fprintln(c.App.ErrWriter, "memvault: nothing found")
			}
			return nil
		}),
	}
}

func envSet(name string) bool { return os.Getenv(name) != "" }

func scopeText(scope []string) string {
	parts := make([]string, 0, len(scope))
	for _, s := range scope {
		if s == "" {
			s = "global"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func reindexCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "reindex",
		Usage: "rebuild the search index from the files",
		Flags: []ucli.Flag{jsonFlag},
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			var progress func(done, total int)
			if f, ok := c.App.ErrWriter.(*os.File); ok && !c.Bool("json") {
				if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
					progress = func(done, total int) {
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
			}
			rep, err := v.Reindex(progress)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, rep)
			}
			fmt.Fprintf(c.App.Writer, "indexed %d files: %d documents in %s\n", rep.Files, rep.Documents, rep.Elapsed.Round(time.Millisecond))
			return nil
		}),
	}
}
