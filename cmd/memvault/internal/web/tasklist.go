package web

// GFM task lists ("- [ ] to do", "- [x] done") rendered as disabled
// checkboxes, as goldmark's extension.TaskList renders them. memvault does
// not link goldmark's extension package for this one extension: the
// package compiles its linkify and table regular expressions at init, in
// every memvault process whatever its command (docs/PERFORMANCE.md,
// "Start-up"). TestTaskListAsGoldmark holds this to goldmark's output.

import (
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// taskList is the extension: the checkbox's parser and its renderer.
type taskList struct{}

func (taskList) Extend(m goldmark.Markdown) {
	m.Parser().AddOptions(parser.WithInlineParsers(util.Prioritized(taskBoxParser{}, 0)))
	m.Renderer().AddOptions(renderer.WithNodeRenderers(util.Prioritized(taskBoxRenderer{}, 500)))
}

// kindTaskBox is the checkbox's node kind (NewNodeKind appends a name to
// goldmark's table: nothing to compile).
var kindTaskBox = ast.NewNodeKind("MemvaultTaskCheckBox")

// taskBox is a list item's checkbox.
type taskBox struct {
	ast.BaseInline
	checked bool
}

func (n *taskBox) Kind() ast.NodeKind { return kindTaskBox }

func (n *taskBox) Dump(source []byte, level int) {
	ast.DumpHelper(n, source, level, map[string]string{"Checked": map[bool]string{true: "true", false: "false"}[n.checked]}, nil)
}

// taskBoxParser reads "[ ]", "[x]" or "[X]" (the space any of \t \n \f
// \r or a space, as goldmark's `\s`) and the white space after it, at the
// start of a list item's first line.
type taskBoxParser struct{}

func (taskBoxParser) Trigger() []byte { return []byte{'['} }

func (taskBoxParser) Parse(parent ast.Node, block text.Reader, _ parser.Context) ast.Node {
	item := parent.Parent()
	if item == nil || item.FirstChild() != parent || parent.HasChildren() {
		return nil
	}
	if _, ok := item.(*ast.ListItem); !ok {
		return nil
	}
	line, _ := block.PeekLine()
	if len(line) < 3 || line[0] != '[' || line[2] != ']' {
		return nil
	}
	c := line[1]
	if c != 'x' && c != 'X' && !isSpaceRE(c) {
		return nil
	}
	n := 3
	for n < len(line) && isSpaceRE(line[n]) {
		n++
	}
	block.Advance(n)
	return &taskBox{checked: c == 'x' || c == 'X'}
}

func (taskBoxParser) CloseBlock(ast.Node, parser.Context) {}

// isSpaceRE is the RE2 class \s: tab, newline, form feed, carriage return
// and space (not the vertical tab).
func isSpaceRE(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// taskBoxRenderer writes the checkbox as goldmark's HTML renderer does
// without XHTML.
type taskBoxRenderer struct{}

func (taskBoxRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(kindTaskBox, func(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if n.(*taskBox).checked {
			_, _ = w.WriteString(`<input checked="" disabled="" type="checkbox"> `)
		} else {
			_, _ = w.WriteString(`<input disabled="" type="checkbox"> `)
		}
		return ast.WalkContinue, nil
	})
}
