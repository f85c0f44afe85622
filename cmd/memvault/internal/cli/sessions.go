package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type sessionsOptions struct {
	json bool
}

func newSessionsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "sessions",
		Usage: "list stored transcripts, by agent and session",
		Flags: []ucli.Flag{jsonFlag},
	}
}

func runSessions(c *ucli.Context, v *vault.Vault) error {
	opts := sessionsOptions{json: c.Bool("json")}
	list, err := v.Sessions()
	if err != nil {
		return err
	}
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
