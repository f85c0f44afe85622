package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
)

type logOptions struct {
	thread string // "" for every commit
	limit  int    // 0 for all
	json   bool
}

func newLogCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "log",
		Usage: "show the vault's lineage of commits, newest first",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "thread", Aliases: []string{"t"}, Usage: "only commits that touch this thread"},
			limitFlag("commits, the newest", 20),
			jsonFlag,
		},
	}
}

func newLogOptions(c *ucli.Context) (logOptions, error) {
	limit, err := listLimit(c)
	if err != nil {
		return logOptions{}, err
	}
	opts := logOptions{limit: limit, json: c.Bool("json")}
	if t := c.String("thread"); t != "" {
		th, err := vault.ParseThread(t)
		if err != nil {
			return opts, err
		}
		opts.thread = th.String()
	}
	return opts, nil
}

func runLog(c *ucli.Context, v *vault.Vault) error {
	opts, err := newLogOptions(c)
	if err != nil {
		return err
	}
	commits := []gitrepo.CommitInfo{}
	err = v.Log(func(ci gitrepo.CommitInfo) bool {
		if opts.thread != "" && !slices.Contains(ci.Trailers["Memvault-Thread"], opts.thread) {
			return true
		}
		commits = append(commits, ci)
		return opts.limit == 0 || len(commits) < opts.limit
	})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(c.App.Writer, commits)
	}
	for _, ci := range commits {
		printCommit(c.App.Writer, ci)
	}
	return nil
}

func printCommit(w io.Writer, ci gitrepo.CommitInfo) {
	var who []string
	if a := ci.Trailers["Memvault-Agent"]; len(a) > 0 {
		who = append(who, "agent "+a[0])
	}
	if s := ci.Trailers["Memvault-Session"]; len(s) > 0 {
		who = append(who, "session "+s[0])
	}
	line := fmt.Sprintf("%s %s %s", vault.ShortHash(ci.Hash), ci.Time.Local().Format("2006-01-02 15:04"), ci.Subject)
	if len(who) > 0 {
		line += "  (" + strings.Join(who, ", ") + ")"
	}
	fmt.Fprintln(w, line)
}
