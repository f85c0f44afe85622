package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type sessionsOptions struct {
	limit int // the first N; 0 for all
	json  bool
}

func newSessionsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "sessions",
		Usage: "list stored transcripts, by agent and session",
		Flags: []ucli.Flag{limitFlag("sessions, the first by agent and session", 0), jsonFlag},
	}
}

func runSessions(c *ucli.Context, v *vault.Vault) error {
	limit, err := legacyListLimit(c)
	if err != nil {
		return err
	}
	opts := sessionsOptions{limit: limit, json: c.Bool("json")}
	all, err := v.Sessions()
	if err != nil {
		return err
	}
	list := first(all, opts.limit)
	limitNote(envOf(c), c.Bool("json"), len(list), len(all), "sessions", "first")
	if opts.json {
		if list == nil {
			list = []vault.SessionInfo{}
		}
		return printJSON(c.App.Writer, list)
	}
	for _, s := range list {
		fmt.Fprintf(c.App.Writer, "%-16s %-40s %6d messages  %d parts  %s\n", s.Agent, s.Session, s.Messages, s.Parts, s.Path)
	}
	return nil
}
