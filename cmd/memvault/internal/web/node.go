package web

import (
	"errors"
	"net/http"
	"unicode/utf8"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/lineage"
)

// nodeData is a node and its lineage, as `memvault expand` gives it, and
// the drawing of that lineage.
type nodeData struct {
	*lineage.Expansion
	DAG dag
}

func (s *Server) node(r *http.Request) (*view, error) {
	arg := r.PathValue("id")
	v, _, err := s.open(true)
	if err != nil {
		return nil, err
	}
	id, err := v.ResolveNodeID("node", arg)
	if errors.Is(err, vault.ErrInvalid) {
		return nil, fault.New(vault.ErrNotFound, "node %q: no such node", arg)
	}
	if err != nil {
		return nil, err
	}
	ix, err := v.NodesThen([]string{id}, nil)
	if err != nil {
		return nil, err
	}
	n := ix.Nodes[id]
	if n == nil {
		return nil, fault.New(vault.ErrNotFound, "node %s: no such node", id)
	}
	// A person reviewing the vault reads every agent's nodes: the node's
	// own agent is the one asking.
	ex, err := lineage.Expand(v, id, lineage.ExpandOptions{Agent: n.Agent})
	if err != nil {
		return nil, err
	}
	return &view{Page: "node", Title: "Node " + id, Data: &nodeData{Expansion: ex, DAG: layoutDAG(ex)}}, nil
}

// The drawing: parents in the top row, the node among its siblings in the
// middle, children below; a line from each parent to the node and from
// the node to each child. Every box is a link to its node's page.
const (
	boxW, boxH = 190, 44
	gapX, rowY = 16, 90
	margin     = 12
	titleRunes = 26
)

// dag is the lineage laid out for the SVG.
type dag struct {
	Width, Height int
	Boxes         []box
	Lines         []edge
}

type box struct {
	X, Y       int
	ID, Kind   string
	Title      string
	Self       bool
	TextX, TxY int
}

type edge struct{ X1, Y1, X2, Y2 int }

func layoutDAG(ex *lineage.Expansion) dag {
	self := lineage.NodeRef{ID: ex.Node.ID, Kind: ex.Node.Kind, Title: ex.Node.Title}
	middle := append([]lineage.NodeRef{self}, ex.Siblings...)
	rows := [][]lineage.NodeRef{ex.Parents, middle, ex.Children}
	widest := 1
	for _, row := range rows {
		widest = max(widest, len(row))
	}
	d := dag{Width: 2*margin + widest*(boxW+gapX) - gapX, Height: 2*margin + 2*rowY + boxH}
	var selfBox box
	for y, row := range rows {
		for i, ref := range row {
			b := box{X: margin + i*(boxW+gapX), Y: margin + y*rowY, ID: ref.ID, Kind: ref.Kind,
				Title: clip(ref.Title, titleRunes), Self: y == 1 && i == 0}
			b.TextX, b.TxY = b.X+8, b.Y+18
			if b.Self {
				selfBox = b
			}
			d.Boxes = append(d.Boxes, b)
		}
	}
	for _, b := range d.Boxes {
		switch {
		case b.Y == selfBox.Y-rowY:
			d.Lines = append(d.Lines, edge{b.X + boxW/2, b.Y + boxH, selfBox.X + boxW/2, selfBox.Y})
		case b.Y == selfBox.Y+rowY:
			d.Lines = append(d.Lines, edge{selfBox.X + boxW/2, selfBox.Y + boxH, b.X + boxW/2, b.Y})
		}
	}
	return d
}

// clip shortens s to n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
