package web

import (
	"errors"
	"net/http"
	"unicode"
	"unicode/utf8"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/node"
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
	ix, err := node.Lookup(v.Files(), []string{id}, nil)
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
	return &view{Page: "node", Title: "Node " + id, Data: &nodeData{Expansion: ex, DAG: layoutDAG(ex, labeler(r))}}, nil
}

// The drawing: parents in the top row, the node among its siblings in the
// middle, children below; a line from each parent to the node and from
// the node to each child. Every box is a link to its node's page.
//
// The boxes' text is set in a monospace font (the stylesheet's svg.dag
// text), 12px, whose advance is 0.6em in the common monospace faces
// (DejaVu Sans Mono, Liberation Mono, Menlo, Consolas): 7.2px a column.
// Each line is clipped to the columns a box holds, a wide (East Asian or
// emoji) rune counting two, so that no text runs past its box, whatever
// the kind, the id or the title (TestE2EWebBrowser measures it in
// Chromium).
const (
	boxW, boxH = 240, 44
	gapX, rowY = 16, 90
	margin     = 12
	padX       = 8
	boxCols    = (boxW - 2*padX) * 10 / 75 // 7.5px a column, a little over the font's 7.2
)

// dag is the lineage laid out for the SVG.
type dag struct {
	Width, Height int
	BoxW, BoxH    int
	Boxes         []box
	Lines         []edge
}

type box struct {
	X, Y       int
	ID         string
	Label      string // the kind and the short id, clipped
	Title      string // clipped
	Tip        string // the id and the whole title, shown on hover
	Self       bool
	TextX, TxY int
}

type edge struct{ X1, Y1, X2, Y2 int }

func layoutDAG(ex *lineage.Expansion, short func(string) string) dag {
	self := lineage.NodeRef{ID: ex.Node.ID, Kind: ex.Node.Kind, Title: ex.Node.Title}
	middle := append([]lineage.NodeRef{self}, ex.Siblings...)
	rows := [][]lineage.NodeRef{ex.Parents, middle, ex.Children}
	widest := 1
	for _, row := range rows {
		widest = max(widest, len(row))
	}
	d := dag{Width: 2*margin + widest*(boxW+gapX) - gapX, Height: 2*margin + 2*rowY + boxH, BoxW: boxW, BoxH: boxH}
	var selfBox box
	for y, row := range rows {
		for i, ref := range row {
			b := box{X: margin + i*(boxW+gapX), Y: margin + y*rowY, ID: ref.ID,
				Label: clip(ref.Kind+" "+short(ref.ID), boxCols), Title: clip(ref.Title, boxCols),
				Tip: ref.ID + " " + ref.Title, Self: y == 1 && i == 0}
			b.TextX, b.TxY = b.X+padX, b.Y+18
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

// clip shortens s to n columns of a monospace font, marking the cut.
func clip(s string, n int) string {
	cols := 0
	for i, r := range s {
		cols += columns(r)
		if cols > n {
			// Cut before the rune that does not fit, and before the one
			// the ellipsis takes the place of when that does not fit
			// either.
			cut := s[:i]
			for w := cols - columns(r); w+1 > n && cut != ""; {
				last, size := utf8.DecodeLastRuneInString(cut)
				cut = cut[:len(cut)-size]
				w -= columns(last)
			}
			return cut + "…"
		}
	}
	return s
}

// columns is how many columns r takes in a monospace font: two for the
// wide runes (CJK, Hangul, full-width forms, emoji), none for combining
// marks, else one.
func columns(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
		return 0
	case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0xA4CF, r >= 0xAC00 && r <= 0xD7A3,
		r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F, r >= 0xFF00 && r <= 0xFF60,
		r >= 0xFFE0 && r <= 0xFFE6, r >= 0x1F300 && r <= 0x1FAFF, r >= 0x20000 && r <= 0x3FFFD:
		return 2
	}
	return 1
}
