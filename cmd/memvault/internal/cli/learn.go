package cli

import (
	"strconv"

	"github.com/memvault/memvault/vault/continuity"

	ucli "github.com/urfave/cli/v2"
)

func newLearnCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "learn",
		Usage:     "record a mistake and how to prevent it (a repeat reinforces it), or invalidate or correct one",
		ArgsUsage: " ",
		Flags: writeFlags(
			&ucli.StringFlag{Name: "error", Aliases: []string{"e"}, Usage: "what failed (required)"},
			&ucli.StringFlag{Name: "cause", Aliases: []string{"c"}, Usage: "why it failed"},
			&ucli.StringFlag{Name: "prevention", Aliases: []string{"p"}, Usage: "how to prevent it (required)"},
			learnScopeFlag,
			&ucli.IntFlag{Name: "ttl", Usage: "days it lives unless reinforced", DefaultText: strconv.Itoa(continuity.DefaultLearningTTL)},
			&ucli.StringFlag{Name: "invalidate", Usage: "mark learning ID as wrong because it caused a problem (with --why)"},
			&ucli.StringFlag{Name: "correct", Usage: "fix learning ID (with --prevention or --cause, and --why)"},
			&ucli.StringFlag{Name: "why", Usage: "what went wrong, for --invalidate and --correct"},
			rowThreadFlag, globalFlag, nowFlag,
		),
	}
}

func runLearn(c *ucli.Context, ct *continuity.ContinuityTx) error {
	inv, cor := c.String("invalidate"), c.String("correct")
	switch {
	case inv != "" && cor != "":
		return usagef("learn: --invalidate and --correct exclude each other")
	case inv != "":
		if c.IsSet("error") || c.IsSet("prevention") || c.IsSet("cause") {
			return usagef("learn: --invalidate takes only --why")
		}
		if c.String("why") == "" {
			return usagef("learn: --invalidate needs --why: say what went wrong")
		}
		_, err := ct.Invalidate(inv, c.String("why"))
		return err
	case cor != "":
		_, err := ct.Correct(cor, c.String("cause"), c.String("prevention"), c.String("why"))
		return err
	}
	_, err := ct.Learn(continuity.LearnInput{Error: c.String("error"), Cause: c.String("cause"),
		Prevention: c.String("prevention"), Scope: c.String("scope"), TTL: c.Int("ttl")})
	return err
}
