package node

import (
	"slices"
	"sort"
)

// Index is every node's front matter, with parents derived from the
// children lists of condensed nodes.
type Index struct {
	Nodes   map[string]*Node
	Parents map[string][]string
}

// newIndex returns an empty index.
func newIndex() *Index {
	return &Index{Nodes: map[string]*Node{}, Parents: map[string][]string{}}
}

// Add puts n into the index and records it as the parent of its children:
// the loader's, and a transaction's for the nodes it creates.
func (ix *Index) Add(n *Node) {
	ix.Nodes[n.ID] = n
	for _, c := range n.Children {
		ix.Parents[c] = appendUnique(ix.Parents[c], n.ID)
	}
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// Filter selects nodes for `memvault nodes`.
type Filter struct {
	Agent   string
	Session string
	Kind    string
	Thread  string
}

// Select returns the matching nodes, oldest first.
func (ix *Index) Select(f Filter) []*Node {
	var out []*Node
	for _, n := range ix.Nodes {
		switch {
		case f.Agent != "" && n.Agent != f.Agent,
			f.Session != "" && n.Session != f.Session,
			f.Kind != "" && n.Kind != f.Kind,
			f.Thread != "" && !slices.Contains(n.Threads, f.Thread):
			continue
		}
		out = append(out, n)
	}
	Sort(out)
	return out
}

// Sort puts nodes in the order every list of them is shown in: oldest
// first, then by kind, then by id.
func Sort(ns []*Node) {
	sort.Slice(ns, func(i, j int) bool {
		if ns[i].Created != ns[j].Created {
			return ns[i].Created < ns[j].Created
		}
		if ns[i].Kind != ns[j].Kind {
			return ns[i].Kind < ns[j].Kind
		}
		return ns[i].ID < ns[j].ID
	})
}
