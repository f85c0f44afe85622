package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

// memvault policy: which sources may write which kinds (docs/POLICY.md).
// set records a policy event; show prints the policy in effect, where
// each rule came from, and the latest violations.

type policySetOptions struct {
	writeOptions
	args []string // KIND SOURCES pairs
}

type policyShowOptions struct {
	limitOptions // violations shown, newest first
	json         bool
}

func newPolicyCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "policy",
		Usage: "which sources may write which kinds of event: the rules, where they came from, the refusals",
		Subcommands: []*ucli.Command{
			{
				Name:      "set",
				Usage:     "record a policy event: only these sources may write KIND (any: every source; none: no source)",
				ArgsUsage: "KIND SOURCE[,SOURCE…] [KIND SOURCES]…",
				Description: "Sources: " + strings.Join(vault.PolicySources(), ", ") + ". System kinds (" +
					strings.Join(vault.SystemKinds(), ", ") + ") are memvault's alone and take no rule; the policy\n" +
					"kind itself is never written from control, mcp or executor. The rule holds from the next write.",
			},
			{
				Name:  "show",
				Usage: "print the policy in effect, where each rule came from, and the latest violations",
			},
		},
	}
}

func (o *policySetOptions) flags() []ucli.Flag { return o.writeFlags() }

func (o *policySetOptions) setArgs(args []string) { o.args = args }

func (o *policyShowOptions) flags() []ucli.Flag {
	return []ucli.Flag{o.limitFlag("violations, the newest", 20), newJSONFlag(&o.json)}
}

// preparePolicySet reads the rules before the vault lock is taken.
func preparePolicySet(_ context.Context, opts policySetOptions, _ env, _ *vault.Vault) (txWork, error) {
	args := opts.args
	if len(args) == 0 || len(args)%2 != 0 {
		return txWork{}, &usageError{msg: "policy set: want KIND SOURCE[,SOURCE…] pairs",
			hint: "e.g. memvault policy set constraint cli,edit"}
	}
	rules := map[string][]string{}
	for i := 0; i < len(args); i += 2 {
		kind := args[i]
		var srcs []string
		if args[i+1] != "none" {
			srcs = strings.Split(args[i+1], ",")
		}
		clean, err := vault.CheckPolicyRule(kind, srcs)
		if err != nil {
			return txWork{}, err
		}
		if _, dup := rules[kind]; dup {
			return txWork{}, usagef("policy set: %s named twice", kind)
		}
		rules[kind] = clean
	}
	return txWork{apply: func(tx *vault.Tx) error {
		ev, err := tx.SetPolicy(rules)
		if err == nil {
			tx.Subject(ev.Text)
		}
		return err
	}}, nil
}

// policyReport is `policy show --json`.
type policyReport struct {
	Rules       []vault.PolicyRule `json:"rules"`
	Sources     []string           `json:"sources"`
	SystemKinds []string           `json:"system_kinds"`
	Events      int                `json:"events"`
	Ignored     []vault.PolicyNote `json:"ignored"`
	Violations  []*vault.Event     `json:"violations"`
}

func runPolicyShow(_ context.Context, opts policyShowOptions, e env, v *vault.Vault) error {
	limit, err := opts.listLimit(e, opts.json)
	if err != nil {
		return err
	}
	pol, err := v.LoadPolicy()
	if err != nil {
		return err
	}
	viol, err := v.Violations(limit)
	if err != nil {
		return err
	}
	rep := policyReport{Rules: pol.RulesSorted(), Sources: vault.PolicySources(), SystemKinds: vault.SystemKinds(),
		Events: pol.Events, Ignored: pol.Ignored, Violations: viol}
	if rep.Ignored == nil {
		rep.Ignored = []vault.PolicyNote{}
	}
	if rep.Violations == nil {
		rep.Violations = []*vault.Event{}
	}
	if opts.json {
		return printJSON(e.stdout, rep)
	}
	return printPolicy(e.stdout, rep)
}

func printPolicy(w io.Writer, rep policyReport) error {
	fmt.Fprintf(w, "policy: %d policy events; a kind no rule names may be written from any source\n", rep.Events)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tMAY BE WRITTEN BY\tFROM")
	for _, r := range rep.Rules {
		who := strings.Join(r.Sources, ",")
		if len(r.Sources) == 0 {
			who = "none"
		}
		from := r.From
		if r.TS != "" {
			from += " (" + r.TS + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Kind, who, from)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "system kinds, memvault's alone: %s\n", strings.Join(rep.SystemKinds, ", "))
	for _, n := range rep.Ignored {
		fmt.Fprintf(w, "ignored: %s (%s): %s\n", n.ID, n.TS, n.Reason)
	}
	if len(rep.Violations) == 0 {
		fmt.Fprintln(w, "violations: none")
		return nil
	}
	fmt.Fprintf(w, "violations (the latest %d, newest first):\n", len(rep.Violations))
	for _, ev := range rep.Violations {
		var d struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		who := ev.Agent
		if ev.Session != "" {
			who += "/" + ev.Session
		}
		if ev.Harness != "" {
			who += " (" + ev.Harness + ")"
		}
		if d.Command != "" {
			who += " via " + d.Command
		}
		fmt.Fprintf(w, "  %s  %s  %s  %s\n", ev.TS, ev.ID, who, ev.Text)
	}
	return nil
}
