package cli

import (
	"context"

	"github.com/memvault/memvault/vault/continuity"
	ucli "github.com/urfave/cli/v2"
)

type decideOptions struct {
	protocolOptions
	rowThreadOptions
	decision, rationale string
	scope               string
	supersedes          string // the id of the decision this one replaces
}

func newDecideCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "decide",
		Usage:     "record a decision and its rationale, optionally superseding an earlier one",
		ArgsUsage: " ",
	}
}

func (o *decideOptions) flags() []ucli.Flag {
	return o.writeFlags(
		&ucli.StringFlag{Name: "decision", Aliases: []string{"d"}, Usage: "what was decided (required)", Destination: &o.decision},
		&ucli.StringFlag{Name: "rationale", Aliases: []string{"r"}, Usage: "why (required)", Destination: &o.rationale},
		newLearnScopeFlag(&o.scope),
		&ucli.StringFlag{Name: "supersedes", Usage: "id of the decision this one replaces", Destination: &o.supersedes},
		newRowThreadFlag(&o.thread), newGlobalFlag(&o.global), newNowFlag(&o.now),
	)
}

func runDecide(_ context.Context, opts decideOptions, _ env, ct *continuity.ContinuityTx) error {
	_, err := ct.Decide(continuity.DecideInput{Decision: opts.decision, Rationale: opts.rationale,
		Scope: opts.scope, Supersedes: opts.supersedes})
	return err
}
