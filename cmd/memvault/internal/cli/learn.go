package cli

import (
	"context"
	"strconv"

	"github.com/memvault/memvault/vault/continuity"

	ucli "github.com/urfave/cli/v2"
)

type learnOptions struct {
	protocolOptions
	rowThreadOptions
	failure, cause, prevention string // --error, --cause, --prevention
	failureSet, causeSet       bool   // given: --invalidate refuses them
	preventionSet              bool
	scope                      string
	ttl                        int    // days; 0 for the default
	invalidate, correct        string // a learning's id
	why                        string
}

func newLearnCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "learn",
		Usage:     "record a mistake and how to prevent it (a repeat reinforces it), or invalidate or correct one",
		ArgsUsage: " ",
	}
}

func (o *learnOptions) flags() []ucli.Flag {
	return o.writeFlags(
		&ucli.StringFlag{Name: "error", Aliases: []string{"e"}, Usage: "what failed (required)", Destination: &o.failure, Action: markSet[string](&o.failureSet)},
		&ucli.StringFlag{Name: "cause", Aliases: []string{"c"}, Usage: "why it failed", Destination: &o.cause, Action: markSet[string](&o.causeSet)},
		&ucli.StringFlag{Name: "prevention", Aliases: []string{"p"}, Usage: "how to prevent it (required)", Destination: &o.prevention, Action: markSet[string](&o.preventionSet)},
		newLearnScopeFlag(&o.scope),
		&ucli.IntFlag{Name: "ttl", Usage: "days it lives unless reinforced", DefaultText: strconv.Itoa(continuity.DefaultLearningTTL), Destination: &o.ttl},
		&ucli.StringFlag{Name: "invalidate", Usage: "mark learning ID as wrong because it caused a problem (with --why)", Destination: &o.invalidate},
		&ucli.StringFlag{Name: "correct", Usage: "fix learning ID (with --prevention or --cause, and --why)", Destination: &o.correct},
		&ucli.StringFlag{Name: "why", Usage: "what went wrong, for --invalidate and --correct", Destination: &o.why},
		newRowThreadFlag(&o.thread), newGlobalFlag(&o.global), newNowFlag(&o.now),
	)
}

func runLearn(_ context.Context, opts learnOptions, _ env, ct *continuity.ContinuityTx) error {
	inv, cor := opts.invalidate, opts.correct
	switch {
	case inv != "" && cor != "":
		return usagef("learn: --invalidate and --correct exclude each other")
	case inv != "":
		if opts.failureSet || opts.preventionSet || opts.causeSet {
			return usagef("learn: --invalidate takes only --why")
		}
		if opts.why == "" {
			return usagef("learn: --invalidate needs --why: say what went wrong")
		}
		_, err := ct.Invalidate(inv, opts.why)
		return err
	case cor != "":
		_, err := ct.Correct(cor, opts.cause, opts.prevention, opts.why)
		return err
	}
	_, err := ct.Learn(continuity.LearnInput{Error: opts.failure, Cause: opts.cause,
		Prevention: opts.prevention, Scope: opts.scope, TTL: opts.ttl})
	return err
}
