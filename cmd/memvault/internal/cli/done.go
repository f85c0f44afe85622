package cli

import (
	"strings"

	"github.com/memvault/memvault/vault/continuity"

	"github.com/memvault/memvault/vault"

	ucli "github.com/urfave/cli/v2"
)

func newDoneCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "done",
		Usage:     "record an accomplishment; a next action's number, text or id (any unique prefix) takes it off the queue",
		ArgsUsage: "TEXT | N",
		Flags:     writeFlags(rowThreadFlag, globalFlag, nowFlag),
	}
}

func runDone(c *ucli.Context, ct *continuity.ContinuityTx) error {
	text, err := textArg(c, "done")
	if err != nil {
		return err
	}
	// One word that is an event id, or a prefix of one, names the next
	// action, blocker or commitment it closes; other text is the
	// accomplishment itself.
	if !strings.ContainsAny(strings.TrimSpace(text), " \t\n") && strings.HasPrefix(strings.TrimSpace(text), vault.EventIDMarker) {
		if text, err = eventID(ct.Tx, "done", strings.TrimSpace(text)); err != nil {
			return err
		}
	}
	return ct.Done(text)
}
