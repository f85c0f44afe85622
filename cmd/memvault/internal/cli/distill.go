package cli

import (
	"fmt"
	"io"

	"github.com/memvault/memvault/vault/node"
)

// The distillation commands (summarize, compact, condense) share this: one
// transaction that makes nodes (summarize.go's distillModel), then a line
// per node made or found made.

// nodesMade are the nodes a distillation step returned; fresh[i] says
// whether nodes[i] was created now or already existed.
type nodesMade struct {
	nodes []*node.Node
	fresh []bool
}

func one(n *node.Node, created bool, err error) (nodesMade, error) {
	if err != nil {
		return nodesMade{}, err
	}
	return nodesMade{nodes: []*node.Node{n}, fresh: []bool{created}}, nil
}

func (m nodesMade) print(w io.Writer, json bool) error {
	if json {
		nodes := m.nodes
		if nodes == nil {
			nodes = []*node.Node{}
		}
		return printJSON(w, nodes)
	}
	for i, n := range m.nodes {
		state := "created"
		if !m.fresh[i] {
			state = "exists"
		}
		fmt.Fprintf(w, "%s  %s  %s  %s\n", n.ID, n.Kind, state, n.Path)
	}
	return nil
}
