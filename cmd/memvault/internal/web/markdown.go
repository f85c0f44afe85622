package web

import (
	"bytes"
	"html/template"
	"reflect"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// A head (MEMORY.md, CONTINUITY.md, a thread's head) is Markdown whose
// rows are the user's and the agent's text: a remembered `<script>` is
// text to show, never markup. So the Markdown is parsed with no HTML at
// all: the parsers of HTML blocks and inline HTML are left out, and a
// `<tag>` is a paragraph's text, escaped by the renderer like any other
// (goldmark's safe mode would instead drop it from the page, hiding what
// was written). Links keep goldmark's check of dangerous URLs
// (javascript:, vbscript:, file:, data: other than images); an image is
// shown as a link to its address, never loaded (the page fetches nothing
// the server did not serve). Every event and node id in the text, bare
// or in backticks, becomes a link to its page labelled with its short id.

// markdownHTML renders src, a head's Markdown, as HTML; label gives an
// id's short form.
func markdownHTML(src []byte, label func(string) string) template.HTML {
	md := goldmark.New(
		goldmark.WithExtensions(taskList{}),
		goldmark.WithParser(parser.NewParser(
			parser.WithBlockParsers(without(parser.DefaultBlockParsers(), parser.NewHTMLBlockParser())...),
			parser.WithInlineParsers(without(parser.DefaultInlineParsers(), parser.NewRawHTMLParser())...),
			parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
			parser.WithASTTransformers(util.Prioritized(idLinker{label}, 100)),
		)),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(imageAsLink{}, 100))),
	)
	var buf bytes.Buffer
	if err := md.Convert(withoutComments(src), &buf); err != nil {
		// Rendering into a buffer fails for no input; should it, the text
		// shows as it is, escaped.
		return template.HTML("<pre>" + template.HTMLEscapeString(string(src)) + "</pre>")
	}
	return template.HTML(buf.String()) //nolint:gosec // goldmark's output of a source without HTML
}

// without is list less the parser of the type of drop.
func without(list []util.PrioritizedValue, drop any) []util.PrioritizedValue {
	var out []util.PrioritizedValue
	for _, p := range list {
		if reflect.TypeOf(p.Value) == reflect.TypeOf(drop) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// idLinker turns the ids of a parsed head into links to their pages.
type idLinker struct{ label func(string) string }

func (l idLinker) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	var spans []*ast.CodeSpan
	var texts []*ast.Text
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link, *ast.AutoLink, *ast.Image:
			return ast.WalkSkipChildren, nil // a link in a link is no link
		case *ast.CodeSpan:
			spans = append(spans, n)
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			// The emphasis parser cuts a text at each `_`, an id's too:
			// the pieces that follow one another in the source are one
			// text again.
			for next, ok := n.NextSibling().(*ast.Text); ok && next.Segment.Start == n.Segment.Stop &&
				!n.SoftLineBreak() && !n.HardLineBreak() && !n.IsRaw() && !next.IsRaw(); next, ok = n.NextSibling().(*ast.Text) {
				n.Segment = n.Segment.WithStop(next.Segment.Stop)
				n.SetSoftLineBreak(next.SoftLineBreak())
				n.SetHardLineBreak(next.HardLineBreak())
				n.Parent().RemoveChild(n.Parent(), next)
			}
			texts = append(texts, n)
		}
		return ast.WalkContinue, nil
	})
	for _, cs := range spans {
		var b []byte
		for c := cs.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				b = append(b, t.Segment.Value(src)...)
			}
		}
		id := string(bytes.TrimSpace(b))
		if idRE().FindString(id) != id {
			continue
		}
		cs.Parent().ReplaceChild(cs.Parent(), cs, l.link(id))
	}
	for _, t := range texts {
		seg := t.Segment
		val := seg.Value(src)
		locs := idRE().FindAllIndex(val, -1)
		if len(locs) == 0 {
			continue
		}
		parent, at := t.Parent(), 0
		for _, loc := range locs {
			if loc[0] > at {
				parent.InsertBefore(parent, t, ast.NewTextSegment(text.NewSegment(seg.Start+at, seg.Start+loc[0])))
			}
			parent.InsertBefore(parent, t, l.link(string(val[loc[0]:loc[1]])))
			at = loc[1]
		}
		// What follows the last id keeps the text's line break.
		rest := ast.NewTextSegment(text.NewSegment(seg.Start+at, seg.Stop))
		rest.SetSoftLineBreak(t.SoftLineBreak())
		rest.SetHardLineBreak(t.HardLineBreak())
		parent.ReplaceChild(parent, t, rest)
	}
}

// link is a link to id's page, labelled with its short form in code.
func (l idLinker) link(id string) ast.Node {
	a := ast.NewLink()
	a.Destination = []byte(idURL(id))
	a.SetAttributeString("class", []byte("id"))
	a.SetAttributeString("title", []byte(id))
	a.AppendChild(a, ast.NewString([]byte(l.label(id))))
	return a
}

// imageAsLink renders an image as a link to its address with its alt
// text: a head's page loads nothing from elsewhere.
type imageAsLink struct{}

func (imageAsLink) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindImage, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		img := n.(*ast.Image)
		dest := util.URLEscape(img.Destination, true)
		_, _ = w.WriteString(`<a class="image" href="`)
		if !html.IsDangerousURL(dest) {
			_, _ = w.Write(util.EscapeHTML(dest))
		}
		_, _ = w.WriteString(`">[image: `)
		for c := img.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				_, _ = w.Write(util.EscapeHTML(t.Segment.Value(src)))
			}
		}
		_, _ = w.WriteString(`]</a>`)
		return ast.WalkSkipChildren, nil
	})
}

// withoutComments is src less its lines that are one HTML comment (the
// render's notes to whoever edits the file, the memvault:keep marker):
// the raw text shows them.
func withoutComments(src []byte) []byte {
	var out []byte
	for line := range bytes.Lines(src) {
		t := bytes.TrimSpace(line)
		if bytes.HasPrefix(t, []byte("<!--")) && bytes.HasSuffix(t, []byte("-->")) && bytes.Count(t, []byte("-->")) == 1 {
			continue
		}
		out = append(out, line...)
	}
	return out
}
