package cli

import (
	"fmt"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type nodesOptions struct {
	filter vault.NodeFilter
	json   bool
}

func newNodesCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "nodes",
		Usage: "list the agent's temporal nodes, oldest first",
		Flags: []ucli.Flag{jsonFlag, threadFlag,
			&ucli.StringFlag{Name: "session", Usage: "only this session"},
			&ucli.StringFlag{Name: "kind", Usage: "session-summary, compaction or condensed"},
		},
	}
}

func newNodesOptions(c *ucli.Context, v *vault.Vault) (nodesOptions, error) {
	agent, err := agentOf(c, v)
	if err != nil {
		return nodesOptions{}, err
	}
	opts := nodesOptions{json: c.Bool("json"),
		filter: vault.NodeFilter{Agent: agent, Session: c.String("session"), Kind: c.String("kind")}}
	if k := opts.filter.Kind; k != "" && !slices.Contains(vault.NodeKinds, k) {
		return opts, usagef("nodes: kind %q: want one of %s", k, strings.Join(vault.NodeKinds, ", "))
	}
	if t := c.String("thread"); t != "" {
		th, err := vault.ParseThread(t)
		if err != nil {
			return opts, err
		}
		opts.filter.Thread = th.String()
	}
	return opts, nil
}

func runNodes(c *ucli.Context, v *vault.Vault) error {
	opts, err := newNodesOptions(c, v)
	if err != nil {
		return err
	}
	ix, err := v.Nodes()
	if err != nil {
		return err
	}
	nodes := ix.Select(opts.filter)
	if opts.json {
		if nodes == nil {
			nodes = []*vault.Node{}
		}
		return printJSON(c.App.Writer, nodes)
	}
	for _, n := range nodes {
		fmt.Fprintf(c.App.Writer, "%s  %s  %-15s %s\n", n.Created, n.ID, n.Kind, n.Title)
	}
	return nil
}
