package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
)

type nodesOptions struct {
	filter vault.NodeFilter
	limit  int // the newest N; 0 for all
	json   bool
}

func newNodesCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "nodes",
		Usage: "list the agent's temporal nodes, oldest first",
		Flags: []ucli.Flag{jsonFlag, threadFlag,
			&ucli.StringFlag{Name: "session", Usage: "only this session"},
			&ucli.StringFlag{Name: "kind", Usage: "only this kind"},
			limitFlag("nodes, the newest", 0),
		},
	}
}

func newNodesOptions(c *ucli.Context, v *vault.Vault) (nodesOptions, error) {
	agent, err := agentOf(c, v)
	if err != nil {
		return nodesOptions{}, err
	}
	limit, err := legacyListLimit(c)
	if err != nil {
		return nodesOptions{}, err
	}
	opts := nodesOptions{json: c.Bool("json"), limit: limit,
		filter: vault.NodeFilter{Agent: agent, Session: c.String("session"), Kind: c.String("kind")}}
	if err := checkChoice("nodes", "kind", opts.filter.Kind, vault.NodeKinds); err != nil {
		return opts, err
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
	all := ix.Select(opts.filter)
	nodes := newest(all, opts.limit)
	limitNote(envOf(c), c.Bool("json"), len(nodes), len(all), "nodes", "newest")
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
