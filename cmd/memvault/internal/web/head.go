package web

import (
	"bufio"
	"bytes"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/merge"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/heads"
)

// A head's history is the commits that changed its file along the
// vault's first-parent lineage. historyScan bounds the commits looked at
// for one page, historyMax the versions listed: a head changes at most
// once a commit, and a page lists the recent past.
const (
	historyMax  = 50
	historyScan = 2000
)

// headData is a head: its text (now, or at a commit), its history, a diff
// between two of its versions, and its conflicts waiting for a person.
type headData struct {
	Path       string
	Rev        string // the commit shown; "" for the file as it stands
	Text       string
	HTML       template.HTML // Text as HTML (markdown.go), unless Raw
	Raw        bool          // the Markdown as it is (?raw=1)
	Toggle     string        // the page the other way: rendered or raw
	Rendered   bool          // no file: rendered from the ledger for the page
	History    []historyEntry
	Complete   bool   // History goes back to the first commit
	Noise      int    // the versions that changed nothing of the memory (history.go)
	AllRenders bool   // they are listed too (?history=all)
	Toggle2    string // the page with them listed, or without
	From, To   string
	Diff       []diffLine
	Same       bool // From and To hold the same text
	Conflicts  []heads.HeadEvent
}

// diffLine is one line of a diff: its class (add, del, ctx, hunk), its
// text and where it came from, the event or node it names or else the
// commit of its version.
type diffLine struct {
	Class, Text, Link string
}

// headPath checks the route's path names a head: MEMORY.md,
// CONTINUITY.md or threads/<kind>/<slug>.md.
func headPath(p string) (string, vault.Thread, error) {
	var th vault.Thread
	switch p {
	case vault.MemoryHead, vault.ContinuityHead:
		return p, th, nil
	}
	rest, ok := strings.CutPrefix(p, "threads/")
	rest, ok2 := strings.CutSuffix(rest, ".md")
	kind, slug, ok3 := strings.Cut(rest, "/")
	if !ok || !ok2 || !ok3 {
		return "", th, fault.New(vault.ErrNotFound, "head %q: no such head", p)
	}
	th, err := vault.ParseThread(kind + ":" + slug)
	if err != nil || th.HeadPath().String() != p {
		return "", th, fault.New(vault.ErrNotFound, "head %q: no such head", p)
	}
	return p, th, nil
}

func (s *Server) head(r *http.Request) (*view, error) {
	path, th, err := headPath(r.PathValue("path"))
	if err != nil {
		return nil, err
	}
	v, _, err := s.open(true)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	d := &headData{Path: path, Rev: q.Get("rev"), From: q.Get("from"), To: q.Get("to"), Raw: q.Get("raw") != ""}
	if d.Rev != "" {
		text, err := ops.FileAt(v, d.Rev, path)
		if err != nil {
			return nil, err
		}
		d.Text = string(text)
	} else {
		text, rendered, err := ops.HeadText(v, path, th)
		if err != nil {
			return nil, err
		}
		d.Text, d.Rendered = string(text), rendered
	}
	toggle := url.Values{}
	if d.Rev != "" {
		toggle.Set("rev", d.Rev)
	}
	if !d.Raw {
		d.HTML = markdownHTML([]byte(d.Text), labeler(r))
		toggle.Set("raw", "1")
	}
	d.Toggle = headURL(path)
	if len(toggle) > 0 {
		d.Toggle += "?" + toggle.Encode()
	}
	versions, complete, err := ops.HeadHistory(v, path, historyMax, historyScan)
	if err != nil {
		return nil, err
	}
	d.Complete, d.AllRenders = complete, q.Get("history") == "all"
	d.History, d.Noise = headHistory(v, versions, complete, d.AllRenders)
	d.Toggle2 = headURL(path) + "#history"
	if !d.AllRenders {
		d.Toggle2 = headURL(path) + "?history=all#history"
	}
	if d.From != "" || d.To != "" {
		if d.From == "" || d.To == "" {
			return nil, fault.New(vault.ErrInvalid, "diff: name both versions, from and to")
		}
		a, err := ops.FileAt(v, d.From, path)
		if err != nil {
			return nil, err
		}
		b, err := ops.FileAt(v, d.To, path)
		if err != nil {
			return nil, err
		}
		d.Diff = diffLines(merge.Unified(d.From, d.To, a, b, 3), d.From, d.To)
		d.Same = len(d.Diff) == 0
	}
	if s.opts.Write {
		st, _, err := heads.FoldedState(v)
		if err != nil {
			return nil, err
		}
		for _, h := range heads.HeadStatesOf(v, st) {
			if h.Head == path {
				d.Conflicts = h.Conflicts
			}
		}
	}
	return &view{Page: "head", Title: path, Data: d}, nil
}

// diffLines reads a unified diff into lines, each linked to the event or
// node it names when the head's render put an id on it, else to the
// version it belongs to (from for a removed line, to for the others).
func diffLines(unified []byte, from, to string) []diffLine {
	var out []diffLine
	sc := bufio.NewScanner(bytes.NewReader(unified))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for n := 0; sc.Scan(); n++ {
		line := sc.Text()
		if n < 2 { // the --- and +++ headers
			continue
		}
		dl := diffLine{Class: "ctx", Text: line, Link: "?rev=" + to}
		switch {
		case strings.HasPrefix(line, "@@"):
			dl.Class, dl.Link = "hunk", ""
		case strings.HasPrefix(line, "+"):
			dl.Class = "add"
		case strings.HasPrefix(line, "-"):
			dl.Class, dl.Link = "del", "?rev="+from
		case strings.HasPrefix(line, `\`):
			dl.Class, dl.Link = "hunk", ""
		}
		if id := idRE().FindString(line); id != "" && dl.Class != "hunk" {
			dl.Link = idURL(id)
		}
		out = append(out, dl)
	}
	return out
}
