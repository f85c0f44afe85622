package cli

import (
	"context"
	"fmt"

	ucli "github.com/urfave/cli/v2"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/node"
)

type nodesOptions struct {
	json                  bool
	thread, session, kind string // filters; "" for any
	limitOptions                 // the newest N; 0 for all
}

func newNodesCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "nodes",
		Usage: "list the agent's temporal nodes, oldest first",
	}
}

func (o *nodesOptions) flags() []ucli.Flag {
	return []ucli.Flag{newJSONFlag(&o.json), newThreadFlag(&o.thread),
		&ucli.StringFlag{Name: "session", Usage: "only this session", Destination: &o.session},
		&ucli.StringFlag{Name: "kind", Usage: "only this kind", Destination: &o.kind},
		o.limitFlag("nodes, the newest", 0),
	}
}

// filter is the selection the options ask for, and the limit.
func (o nodesOptions) filter(e env, v *vault.Vault) (node.Filter, int, error) {
	agent, err := e.agentOf(v)
	if err != nil {
		return node.Filter{}, 0, err
	}
	limit, err := o.listLimit(e, o.json)
	if err != nil {
		return node.Filter{}, 0, err
	}
	f := node.Filter{Agent: agent, Session: o.session, Kind: o.kind}
	if err := checkChoice("nodes", "kind", f.Kind, node.Kinds()); err != nil {
		return f, 0, err
	}
	if o.thread != "" {
		th, err := vault.ParseThread(o.thread)
		if err != nil {
			return f, 0, err
		}
		f.Thread = th.String()
	}
	return f, limit, nil
}

func runNodes(_ context.Context, opts nodesOptions, e env, v *vault.Vault) error {
	f, limit, err := opts.filter(e, v)
	if err != nil {
		return err
	}
	ix, err := node.Load(v.Files())
	if err != nil {
		return err
	}
	all := ix.Select(f)
	nodes := newest(all, limit)
	limitNote(e, opts.json, len(nodes), len(all), "nodes", "newest")
	emptyNote(e, opts.json, len(all), "no nodes match: a node is a session's summary, made at the session's end (or memvault summarize --session S)")
	if opts.json {
		if nodes == nil {
			nodes = []*node.Node{}
		}
		return printJSON(e.stdout, nodes)
	}
	for _, n := range nodes {
		fmt.Fprintf(e.stdout, "%s  %s  %-15s %s\n", n.Created, n.ID, n.Kind, n.Title)
	}
	return nil
}
