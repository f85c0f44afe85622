package lineage

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/memvault/memvault/vault"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/transcript"
)

// NodeRef is a node as it appears in another node's lineage: enough to
// recognise it and expand it next.
type NodeRef struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Agent   string `json:"agent"`
	Session string `json:"session,omitempty"`
	Created string `json:"created"`
	Title   string `json:"title"`
}

func refOf(n *node.Node) NodeRef {
	return NodeRef{ID: n.ID, Kind: n.Kind, Agent: n.Agent, Session: n.Session, Created: n.Created, Title: n.Title}
}

// HeadRef is a thread head that cites a node.
type HeadRef struct {
	Thread string `json:"thread"`
	Path   string `json:"path"`
}

// Expansion is what `memvault expand` returns: the node and everything
// around it in the lineage (DESIGN §5).
type Expansion struct {
	Node       *node.Node          `json:"node"`
	Parents    []NodeRef           `json:"parents"`
	Children   []NodeRef           `json:"children"`
	Siblings   []NodeRef           `json:"siblings"`
	Threads    []HeadRef           `json:"threads"`
	Rows       []*vault.Row        `json:"rows"`
	Transcript []transcript.Stored `json:"transcript"`
}

// ExpandOptions tune Expand.
type ExpandOptions struct {
	Agent   string // the agent asking; another agent's node is refused
	Context int    // transcript messages to add before and after the span
}

// Expand drills down from a node: its parents (condensed nodes that consume
// it), children, siblings (same session, or same parent), the thread heads
// that cite it, the ledger rows linked to it or written during its span, and
// the transcript messages of its span. Nodes are scoped by agent: expanding
// another agent's node needs that agent named explicitly.
func Expand(v *vault.Vault, id string, opts ExpandOptions) (*Expansion, error) {
	if err := fileio.CheckName("node id", id); err != nil {
		return nil, err
	}
	if opts.Context < 0 {
		return nil, fault.New(vault.ErrInvalid, "expand: --context must be 0 or more")
	}
	ix, n, err := expandNodes(v, id, opts.Agent)
	if err != nil {
		return nil, err
	}
	full, err := node.Read(v.Files(), n)
	if err != nil {
		return nil, err
	}
	ex := &Expansion{Node: full, Parents: []NodeRef{}, Children: []NodeRef{}, Siblings: []NodeRef{},
		Threads: []HeadRef{}, Rows: []*vault.Row{}, Transcript: []transcript.Stored{}}
	ex.addRelatives(ix, id, n)
	heads, err := headsCiting(v, id)
	if err != nil {
		return nil, err
	}
	ex.Threads = append(ex.Threads, heads...)
	span, err := ex.addTranscript(v, n, opts.Context)
	if err != nil {
		return nil, err
	}
	if err := ex.addRows(v, id, full, span); err != nil {
		return nil, err
	}
	return ex, nil
}

// expandNodes loads the node, the condensed nodes that list it, and its
// session's nodes; then the other children of its parents, for siblings by
// parent. A node that does not exist, or that belongs to another agent
// than the one asking, is refused with a hint.
func expandNodes(v *vault.Vault, id, agent string) (*node.Index, *node.Node, error) {
	ix, err := node.Lookup(v.Files(), []string{id}, func(ix *node.Index) []string {
		n := ix.Nodes[id]
		if n == nil {
			return nil
		}
		var more []string
		if n.Session != "" {
			more = append(more, node.FieldNeedle(n.Session))
		}
		more = append(more, n.Children...)
		for _, p := range ix.Parents[id] {
			more = append(more, ix.Nodes[p].Children...)
		}
		return more
	})
	if err != nil {
		return nil, nil, err
	}
	n := ix.Nodes[id]
	if n == nil {
		e := fault.New(vault.ErrNotFound, "expand %s: no such node", id)
		return nil, nil, e.WithHint("list nodes with: memvault nodes")
	}
	if n.Agent != agent {
		e := fault.New(vault.ErrConflict, "expand %s: belongs to agent %s, not %s", id, n.Agent, agent)
		return nil, nil, e.WithHint("to read another agent's node, name it: memvault expand %s --agent %s", id, n.Agent)
	}
	return ix, n, nil
}

// addRelatives lists the node's parents, its children, and its siblings:
// the nodes of its agent that share its session or one of its parents,
// parents and children excepted, and the session summaries a later one
// supersedes left out, in node order. A condensed parent a later node of
// its period supersedes is left out too.
func (ex *Expansion) addRelatives(ix *node.Index, id string, n *node.Node) {
	var parents []string
	for _, p := range ix.Parents[id] {
		if ix.SupersededBy(p) == "" { // a period condensed again: the node that counts
			parents = append(parents, p)
		}
	}
	if len(parents) == 0 {
		parents = ix.Parents[id]
	}
	for _, p := range parents {
		if pn := ix.Nodes[p]; pn != nil {
			ex.Parents = append(ex.Parents, refOf(pn))
		}
	}
	for _, c := range n.Children {
		if cn := ix.Nodes[c]; cn != nil {
			ex.Children = append(ex.Children, refOf(cn))
		}
	}
	sib := map[string]bool{}
	for _, p := range parents {
		if pn := ix.Nodes[p]; pn != nil {
			for _, c := range pn.Children {
				sib[c] = true
			}
		}
	}
	var siblings []*node.Node
	for _, other := range ix.Nodes {
		if other.ID == id || other.Agent != n.Agent || slices.Contains(parents, other.ID) || slices.Contains(n.Children, other.ID) {
			continue
		}
		if ix.SupersededBy(other.ID) != "" && !sib[other.ID] {
			continue // an earlier summary of the session: the latest counts
		}
		if sib[other.ID] || n.Session != "" && other.Session == n.Session {
			siblings = append(siblings, other)
		}
	}
	node.Sort(siblings)
	for _, s := range siblings {
		ex.Siblings = append(ex.Siblings, refOf(s))
	}
}

// spanTimes are the times of the first and last message of a node's span
// (formatted as vault.FormatTS), "" when none of them has one.
type spanTimes struct{ start, end string }

// addTranscript adds the span's own messages, with context more on each
// side, and returns the span's times, which bound the rows written during
// it. A transcript that is gone adds nothing.
func (ex *Expansion) addTranscript(v *vault.Vault, n *node.Node, context int) (spanTimes, error) {
	var span spanTimes
	if n.Span == nil {
		return span, nil
	}
	t := transcript.Ref{Agent: n.Agent, Session: n.Session}
	from := max(1, n.Span.From-context)
	err := transcript.Read(v.Files(), t, from, n.Span.To+context, func(m transcript.Stored) error {
		ex.Transcript = append(ex.Transcript, m)
		if m.N >= n.Span.From && m.N <= n.Span.To && !m.TS.IsZero() {
			ts := vault.FormatTS(m.TS)
			if span.start == "" || ts < span.start {
				span.start = ts
			}
			if ts > span.end {
				span.end = ts
			}
		}
		return nil
	})
	if err != nil && !vault.IsNotFound(err) {
		return span, err
	}
	return span, nil
}

// addRows adds the rows of the node (expandRow), reading only the ledger
// segments that can hold one: those naming the node or its session.
func (ex *Expansion) addRows(v *vault.Vault, id string, n *node.Node, span spanTimes) error {
	rowNeedles := [][]byte{[]byte(id)}
	if n.Session != "" {
		field, _ := json.Marshal(n.Session)
		rowNeedles = append(rowNeedles, append([]byte(`"session":`), field...))
	}
	keep := func(c vault.SegCorrections) bool {
		return slices.Contains(c.Linked, id) || n.Session != "" && slices.Contains(c.Sessions, n.Session)
	}
	cited := citedEvents(n)
	for id := range cited {
		rowNeedles = append(rowNeedles, []byte(`"`+id+`"`))
		keep = nil // any segment may hold a cited event
	}
	st, err := v.LoadStateOf(rowNeedles, keep)
	if err != nil {
		return err
	}
	for _, r := range st.Rows {
		if cited[r.ID] || expandRow(r, id, n, span) {
			ex.Rows = append(ex.Rows, r)
		}
	}
	return nil
}

// citedEvents are the events a self-summary cites: the ids its body lists
// under "## Events" (selfsummary.go); none for another node.
func citedEvents(n *node.Node) map[string]bool {
	if n.Kind != node.SelfSummary {
		return nil
	}
	_, list, _ := strings.Cut(n.Body, "\n## Events\n\n")
	cited := map[string]bool{}
	for _, line := range strings.Split(list, "\n") {
		if id, ok := strings.CutPrefix(line, "- `"); ok {
			if id, _, ok = strings.Cut(id, "`"); ok && fileio.CheckName("event id", id) == nil {
				cited[id] = true
			}
		}
	}
	return cited
}

// expandRow tells whether r is a row of node id: linked to it (its own
// node.created aside), or written by the node's agent in its session
// during the span: a control-line event by the number of the message it
// came from, any other event by its time.
func expandRow(r *vault.Row, id string, n *node.Node, span spanTimes) bool {
	if vault.CorrectionKinds[r.Kind] && !slices.Contains(r.Links, id) && r.Session != n.Session {
		return false // kept only to mark the rows above
	}
	if slices.Contains(r.Links, id) && r.Kind != "node.created" {
		return true
	}
	if n.Span == nil || r.Agent != n.Agent || r.Session != n.Session || strings.HasPrefix(r.Kind, "node.") ||
		strings.HasPrefix(r.Kind, "transcript.") {
		return false
	}
	if at := controlN(r); at > 0 {
		return at >= n.Span.From && at <= n.Span.To
	}
	// A session summary covers the whole session; a row without span
	// times to compare with belongs to the session too.
	return n.Kind == node.SessionSummary || span.start == "" || r.TS >= span.start[:19] && r.TS[:19] <= span.end[:19]
}

// controlN is the message number a control-line event came from, 0 if the
// event did not come from a control line.
func controlN(r *vault.Row) int {
	if r.Source != "control" {
		return 0
	}
	var d struct {
		Control struct {
			N int `json:"n"`
		} `json:"control"`
	}
	if err := vault.JSONUnmarshal(r.Data, &d); err != nil {
		return 0
	}
	return d.Control.N
}

// headsCiting finds the thread heads whose text mentions the node id.
// The heads are read by a few goroutines: on a vault with hundreds of
// threads the reads are most of an expand.
func headsCiting(v *vault.Vault, id string) ([]HeadRef, error) {
	root := filepath.Join(v.Root, "threads")
	kinds, err := v.Files().ReadDir(root)
	if err != nil {
		return nil, nil // no heads yet
	}
	var heads []HeadRef
	for _, k := range kinds {
		if !k.IsDir() {
			continue
		}
		files, err := v.Files().ReadDir(filepath.Join(root, k.Name()))
		if err != nil {
			return nil, fault.IO("read threads/"+k.Name(), err)
		}
		for _, f := range files {
			if slug, ok := strings.CutSuffix(f.Name(), ".md"); ok {
				heads = append(heads, HeadRef{Thread: k.Name() + ":" + slug, Path: "threads/" + k.Name() + "/" + f.Name()})
			}
		}
	}
	cites := make([]bool, len(heads))
	errs := make([]error, len(heads))
	var wg sync.WaitGroup
	const workers = 4
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(heads); i += workers {
				data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(heads[i].Path)))
				if err != nil {
					errs[i] = fault.IO("read "+heads[i].Path, err)
					continue
				}
				cites[i] = bytes.Contains(data, []byte(id))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []HeadRef
	for i, h := range heads {
		if cites[i] {
			out = append(out, h)
		}
	}
	return out, nil
}
