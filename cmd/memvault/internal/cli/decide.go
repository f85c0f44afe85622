package cli

import (
	"github.com/memvault/memvault/vault/continuity"
	ucli "github.com/urfave/cli/v2"
)

func newDecideCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "decide",
		Usage:     "record a decision and its rationale, optionally superseding an earlier one",
		ArgsUsage: " ",
		Flags: writeFlags(
			&ucli.StringFlag{Name: "decision", Aliases: []string{"d"}, Usage: "what was decided (required)"},
			&ucli.StringFlag{Name: "rationale", Aliases: []string{"r"}, Usage: "why (required)"},
			learnScopeFlag,
			&ucli.StringFlag{Name: "supersedes", Usage: "id of the decision this one replaces"},
			rowThreadFlag, globalFlag, nowFlag,
		),
	}
}

func runDecide(c *ucli.Context, ct *continuity.ContinuityTx) error {
	_, err := ct.Decide(continuity.DecideInput{Decision: c.String("decision"), Rationale: c.String("rationale"),
		Scope: c.String("scope"), Supersedes: c.String("supersedes")})
	return err
}
