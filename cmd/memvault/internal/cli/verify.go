package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type verifyOptions struct {
	json bool
}

func newVerifyCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "verify",
		Usage: "check every hash, every prev link and every reference in the ledger",
		Flags: []ucli.Flag{jsonFlag},
	}
}

// runVerify prints every problem, then fails with ExitCorrupt on its own
// (silentError): the report is the message.
func runVerify(c *ucli.Context, v *vault.Vault) error {
	opts := verifyOptions{json: c.Bool("json")}
	rep, err := v.Verify()
	if err != nil {
		return err
	}
	w := c.App.Writer
	if opts.json {
		if rep.Problems == nil {
			rep.Problems = []vault.Problem{}
		}
		if err := printJSON(w, rep); err != nil {
			return err
		}
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintf(c.App.ErrWriter, "%s\n", p)
		}
		for _, p := range rep.Torn {
			fmt.Fprintf(c.App.ErrWriter, "note: %s\n", p)
		}
		if rep.OK {
			fmt.Fprintf(w, "ok: %d events in %d segments, chain intact\n", rep.Events, rep.Segments)
		} else {
			fmt.Fprintf(w, "FAILED: %d problems in %d events\n", len(rep.Problems), rep.Events)
		}
	}
	if !rep.OK {
		return &silentError{code: ExitCorrupt}
	}
	return nil
}
