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
	sup     map[string]string // SupersededBy's map, built on first use
}

// newIndex returns an empty index.
func newIndex() *Index {
	return &Index{Nodes: map[string]*Node{}, Parents: map[string][]string{}}
}

// Add puts n into the index and records it as the parent of its children:
// the loader's, and a transaction's for the nodes it creates.
func (ix *Index) Add(n *Node) {
	ix.Nodes[n.ID] = n
	ix.sup = nil
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
	// All keeps the session summaries and condensed nodes a later one
	// supersedes, which Select leaves out otherwise.
	All bool
}

// Select returns the matching nodes, oldest first.
func (ix *Index) Select(f Filter) []*Node {
	var out []*Node
	for _, n := range ix.Nodes {
		switch {
		case f.Agent != "" && n.Agent != f.Agent,
			f.Session != "" && n.Session != f.Session,
			f.Kind != "" && n.Kind != f.Kind,
			f.Thread != "" && !slices.Contains(n.Threads, f.Thread),
			!f.All && ix.SupersededBy(n.ID) != "":
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

// SupersededBy returns the session summary or condensed node that
// replaces node id, "" when none does. A condensed node that a later one
// lists in its supersedes is replaced by it (a period condensed again:
// docs/LINEAGE.md, "Cadence"). A session has one summary that counts per agent: a summary
// that a later one lists in its supersedes is replaced by it; of the
// others of one agent and session (a vault written before supersedes
// held several), the one whose span ends last, then the greatest id (its
// first 48 bits are its created time), counts. An index loaded around a
// few nodes (Lookup) knows only the summaries it holds: look up the
// session to know them all.
func (ix *Index) SupersededBy(id string) string {
	if ix.sup == nil {
		ix.sup = superseded(ix.Nodes)
	}
	return ix.sup[id]
}

func superseded(nodes map[string]*Node) map[string]string {
	sup := map[string]string{}
	for _, n := range nodes {
		if n.Kind != SessionSummary && n.Kind != Condensed {
			continue
		}
		for _, old := range n.Supersedes {
			if old != n.ID && (sup[old] == "" || sup[old] < n.ID) {
				sup[old] = n.ID
			}
		}
	}
	best := map[[2]string]*Node{}
	for _, n := range nodes {
		if n.Kind != SessionSummary || sup[n.ID] != "" {
			continue
		}
		k := [2]string{n.Agent, n.Session}
		if b := best[k]; b == nil || later(n, b) {
			best[k] = n
		}
	}
	for _, n := range nodes {
		if n.Kind != SessionSummary || sup[n.ID] != "" {
			continue
		}
		if b := best[[2]string{n.Agent, n.Session}]; b != n {
			sup[n.ID] = b.ID
		}
	}
	return sup
}

// later reports whether session summary a counts over b: its span ends
// later, or as late and its id is greater.
func later(a, b *Node) bool {
	at, bt := 0, 0
	if a.Span != nil {
		at = a.Span.To
	}
	if b.Span != nil {
		bt = b.Span.To
	}
	if at != bt {
		return at > bt
	}
	return a.ID > b.ID
}
