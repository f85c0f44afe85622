package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/memvault/memvault/vault/lineage"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type expandOptions struct {
	json    bool
	context int      // transcript messages before and after the span
	args    []string // NODE_ID
}

func newExpandCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "expand",
		Usage:     "drill down from a node: parents, children, siblings, heads, rows, transcript",
		ArgsUsage: "NODE_ID",
		Description: "NODE_ID is a node id (n_ and 26 characters) or any unique prefix of one, with or\n" +
			"without n_, of at least 4 characters after it: an ambiguous prefix lists the nodes it could be.",
	}
}

func (o *expandOptions) flags() []ucli.Flag {
	return []ucli.Flag{newJSONFlag(&o.json),
		// expand's own --agent, when given, is the env's agent (envOf).
		&ucli.StringFlag{Name: "agent", Usage: "the agent whose node it is (default: the current agent)"},
		&ucli.IntFlag{Name: "context", Usage: "transcript messages to add before and after the span", Destination: &o.context},
	}
}

func (o *expandOptions) setArgs(args []string) { o.args = args }

func runExpand(_ context.Context, opts expandOptions, e env, v *vault.Vault) error {
	if len(opts.args) != 1 {
		return &usageError{msg: "expand: want exactly one node id",
			hint: "memvault nodes lists them; e.g. memvault expand n_01m8jkk703 (a unique prefix will do)"}
	}
	agent, err := e.agentOf(v)
	if err != nil {
		return err
	}
	id, err := v.ResolveNodeID("expand", opts.args[0])
	if err != nil {
		return err
	}
	ex, err := lineage.Expand(v, id, lineage.ExpandOptions{Agent: agent, Context: opts.context})
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(e.stdout, ex)
	}
	printExpansion(e.stdout, ex)
	return nil
}

func printExpansion(w io.Writer, ex *lineage.Expansion) {
	n := ex.Node
	fmt.Fprintf(w, "node %s  %s  agent %s", n.ID, n.Kind, n.Agent)
	if n.Session != "" {
		fmt.Fprintf(w, "  session %s", n.Session)
	}
	fmt.Fprintf(w, "\n  %s\n", n.Path)
	if n.Span != nil {
		fmt.Fprintf(w, "  span %s messages %d-%d\n", n.Span.Path, n.Span.From, n.Span.To)
	}
	fmt.Fprintf(w, "\n%s\n", strings.TrimRight(n.Body, "\n"))
	refs := func(title string, list []lineage.NodeRef) {
		if len(list) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, r := range list {
			fmt.Fprintf(w, "  %s  %s  %s\n", r.ID, r.Kind, r.Title)
		}
	}
	refs("parents", ex.Parents)
	refs("children", ex.Children)
	refs("siblings", ex.Siblings)
	if len(ex.Threads) > 0 {
		fmt.Fprintf(w, "\nthreads:\n")
		for _, h := range ex.Threads {
			fmt.Fprintf(w, "  %s  %s\n", h.Thread, h.Path)
		}
	}
	if len(ex.Rows) > 0 {
		fmt.Fprintf(w, "\nrows:\n")
		for _, r := range ex.Rows {
			printRow(w, r)
		}
	}
	if len(ex.Transcript) > 0 {
		fmt.Fprintf(w, "\ntranscript:\n")
		for _, m := range ex.Transcript {
			printMessage(w, m)
		}
	}
}
