package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

// nodeAction runs a distillation step in one transaction and prints the
// nodes it made (or found already made).
func nodeAction(cmd string, fn func(c *ucli.Context, tx *vault.Tx) ([]*vault.Node, []bool, error)) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		v, err := openVault(c)
		if err != nil {
			return err
		}
		agent, err := agentOf(c, v)
		if err != nil {
			return err
		}
		var nodes []*vault.Node
		var fresh []bool
		res, err := v.Update(vault.TxOptions{Command: cmd, Agent: agent, Session: c.String("session"),
			Harness: c.String("harness"), Force: c.Bool("force")}, func(tx *vault.Tx) error {
			var err error
			nodes, fresh, err = fn(c, tx)
			return err
		})
		if err != nil {
			return err
		}
		for _, w := range res.Warnings {
			fmt.Fprintf(c.App.ErrWriter, "memvault: warning: %s\n", w)
		}
		if c.Bool("json") {
			if nodes == nil {
				nodes = []*vault.Node{}
			}
			return printJSON(c.App.Writer, nodes)
		}
		for i, n := range nodes {
			state := "created"
			if !fresh[i] {
				state = "exists"
			}
			fmt.Fprintf(c.App.Writer, "%s  %s  %s  %s\n", n.ID, n.Kind, state, n.Path)
		}
		return nil
	}
}

func one(n *vault.Node, created bool, err error) ([]*vault.Node, []bool, error) {
	if err != nil {
		return nil, nil, err
	}
	return []*vault.Node{n}, []bool{created}, nil
}

func summarizeCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "summarize",
		Usage: "write the session-summary node of a session (deterministic)",
		Flags: []ucli.Flag{requiredSession, harnessFlag, forceFlag, jsonFlag, threadFlag},
		Action: nodeAction("summarize", func(c *ucli.Context, tx *vault.Tx) ([]*vault.Node, []bool, error) {
			if c.String("session") == "" {
				return nil, nil, usagef("summarize: --session is required")
			}
			t := vault.TranscriptRef{Agent: tx.Agent(), Session: c.String("session")}
			return one(tx.Summarize(t, vault.SummaryOptions{Thread: c.String("thread")}))
		}),
	}
}

func compactCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "compact",
		Usage: "record a compaction as a node, with the harness's summary (--file, stdin, or the transcript's own)",
		Flags: []ucli.Flag{requiredSession, harnessFlag, forceFlag, jsonFlag,
			&ucli.StringFlag{Name: "file", Usage: "file holding the compaction summary (- for stdin)"},
		},
		Action: nodeAction("compact", func(c *ucli.Context, tx *vault.Tx) ([]*vault.Node, []bool, error) {
			if c.String("session") == "" {
				return nil, nil, usagef("compact: --session is required")
			}
			summary, err := summaryInput(c)
			if err != nil {
				return nil, nil, err
			}
			t := vault.TranscriptRef{Agent: tx.Agent(), Session: c.String("session")}
			return one(tx.Compact(t, summary))
		}),
	}
}

// summaryInput reads --file, or stdin when it is not a terminal.
func summaryInput(c *ucli.Context) (string, error) {
	f := c.String("file")
	var r io.Reader
	switch {
	case f == "-":
		r = c.App.Reader
	case f != "":
		data, err := os.ReadFile(f)
		if err != nil {
			return "", usagef("compact: --file %s: %v", f, err)
		}
		return string(data), nil
	default:
		if file, ok := c.App.Reader.(*os.File); ok {
			if info, err := file.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
				return "", nil // a terminal: no summary piped in
			}
		}
		r = c.App.Reader
	}
	data, err := io.ReadAll(io.LimitReader(r, vault.MaxTextBytes+1))
	if err != nil {
		return "", fmt.Errorf("compact: read stdin: %w", err)
	}
	return string(data), nil
}

func condenseCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "condense",
		Usage: "write condensed nodes over session summaries and compaction nodes, per day or week",
		Flags: []ucli.Flag{harnessFlag, forceFlag, jsonFlag, threadFlag,
			&ucli.StringFlag{Name: "period", Value: "day", Usage: "day or week"},
			&ucli.BoolFlag{Name: "current", Usage: "also condense the period still under way"},
		},
		Action: nodeAction("condense", func(c *ucli.Context, tx *vault.Tx) ([]*vault.Node, []bool, error) {
			nodes, err := tx.Condense(vault.CondenseOptions{Period: c.String("period"), Thread: c.String("thread"), Current: c.Bool("current")})
			fresh := make([]bool, len(nodes))
			for i := range fresh {
				fresh[i] = true
			}
			return nodes, fresh, err
		}),
	}
}

func nodesCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "nodes",
		Usage: "list the agent's temporal nodes, oldest first",
		Flags: []ucli.Flag{jsonFlag, threadFlag,
			&ucli.StringFlag{Name: "session", Usage: "only this session"},
			&ucli.StringFlag{Name: "kind", Usage: "session-summary, compaction or condensed"},
		},
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			agent, err := agentOf(c, v)
			if err != nil {
				return err
			}
			f := vault.NodeFilter{Agent: agent, Session: c.String("session"), Kind: c.String("kind")}
			if f.Kind != "" && !slices.Contains(vault.NodeKinds, f.Kind) {
				return usagef("nodes: kind %q: want one of %s", f.Kind, strings.Join(vault.NodeKinds, ", "))
			}
			if t := c.String("thread"); t != "" {
				th, err := vault.ParseThread(t)
				if err != nil {
					return err
				}
				f.Thread = th.String()
			}
			ix, err := v.Nodes()
			if err != nil {
				return err
			}
			nodes := ix.Select(f)
			if c.Bool("json") {
				if nodes == nil {
					nodes = []*vault.Node{}
				}
				return printJSON(c.App.Writer, nodes)
			}
			for _, n := range nodes {
				fmt.Fprintf(c.App.Writer, "%s  %s  %-15s %s\n", n.Created, n.ID, n.Kind, n.Title)
			}
			return nil
		}),
	}
}

func expandCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "expand",
		Usage:     "drill down from a node: parents, children, siblings, heads, rows, transcript",
		ArgsUsage: "NODE_ID",
		Flags: []ucli.Flag{jsonFlag,
			&ucli.StringFlag{Name: "agent", Usage: "the agent whose node it is (default: the current agent)"},
			&ucli.IntFlag{Name: "context", Usage: "transcript messages to add before and after the span"},
		},
		Action: readAction(func(c *ucli.Context, v *vault.Vault) error {
			if c.NArg() != 1 {
				return usagef("expand: want exactly one node id")
			}
			agent, err := agentOf(c, v)
			if err != nil {
				return err
			}
			ex, err := v.Expand(c.Args().First(), vault.ExpandOptions{Agent: agent, Context: c.Int("context")})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, ex)
			}
			printExpansion(c.App.Writer, ex)
			return nil
		}),
	}
}

func printExpansion(w io.Writer, ex *vault.Expansion) {
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
	refs := func(title string, list []vault.NodeRef) {
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
