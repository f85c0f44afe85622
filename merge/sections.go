package merge

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// A markdown document as Markdown merges it: cut into sections at its
// headings as goldmark parses them, so that a "#" in a code block is not
// one, each section known across versions by its heading path.

// section is a slice of a markdown document from one top-level heading up
// to the next (the preamble runs from the start to the first heading).
type section struct {
	key   string // identity across versions: heading path and rank among same-named siblings
	path  string // human-readable heading path
	title string // own heading text
	text  []byte // the original bytes, heading included
	head  int    // length of the heading lines at the start of text
	keep  bool   // pinned by KeepMarker, here or in an enclosing section
}

// splitSections cuts src at its top-level ATX and setext headings, as
// goldmark parses them; the sections' texts concatenate back to src.
func splitSections(src []byte) []section {
	fm := frontMatterEnd(src)
	doc := goldmark.DefaultParser().Parse(text.NewReader(src))

	type heading struct {
		start, headEnd, level int
		title                 string
	}
	var hs []heading
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, ok := n.(*ast.Heading)
		if !ok {
			continue
		}
		pos := n.Pos()
		if pos < fm || pos > len(src) {
			continue
		}
		start := lineStart(src, pos)
		if len(hs) > 0 && start <= hs[len(hs)-1].start {
			continue
		}
		headEnd := lineEnd(src, start)
		if !isATX(src[start:headEnd]) {
			// Setext: text lines, then the underline.
			if l := h.Lines(); l.Len() > 0 {
				headEnd = lineEnd(src, lineEnd(src, lineStart(src, min(l.At(l.Len()-1).Start, len(src)))))
			} else {
				headEnd = lineEnd(src, headEnd)
			}
		}
		hs = append(hs, heading{start: start, headEnd: headEnd, level: h.Level, title: headingText(h, src)})
	}

	secs := make([]section, 0, len(hs)+1)
	end := len(src)
	if len(hs) > 0 {
		end = hs[0].start
	}
	secs = append(secs, section{key: "", text: src[:end:end]})

	type frame struct {
		level int
		key   string
		path  string
	}
	var stack []frame
	seen := map[string]int{}
	for i, h := range hs {
		for len(stack) > 0 && stack[len(stack)-1].level >= h.level {
			stack = stack[:len(stack)-1]
		}
		parentKey, parentPath := "", ""
		if len(stack) > 0 {
			parentKey, parentPath = stack[len(stack)-1].key, stack[len(stack)-1].path
		}
		own := parentKey + "\x00" + strconv.Itoa(h.level) + ":" + h.title
		rank := seen[own]
		seen[own]++
		key := own + "#" + strconv.Itoa(rank)
		path := h.title
		if parentPath != "" {
			path = parentPath + " > " + h.title
		}
		stack = append(stack, frame{level: h.level, key: key, path: path})

		end := len(src)
		if i+1 < len(hs) {
			end = hs[i+1].start
		}
		secs = append(secs, section{
			key: key, path: path, title: h.title,
			text: src[h.start:end:end],
			head: min(h.headEnd, end) - h.start,
		})
	}

	// A keep marker pins its section and every deeper section under it.
	levels := make([]int, len(secs))
	for i := 1; i < len(secs); i++ {
		levels[i] = hs[i-1].level
	}
	for i := range secs {
		if !bytes.Contains(secs[i].text, []byte(KeepMarker)) {
			continue
		}
		secs[i].keep = true
		if i == 0 {
			continue
		}
		for j := i + 1; j < len(secs) && levels[j] > levels[i]; j++ {
			secs[j].keep = true
		}
	}
	return secs
}

// frontMatterEnd returns the length of a YAML front matter block at the
// start of src ("---" up to a closing "---" or "..." line), which goldmark
// would otherwise read as a thematic break and a setext heading.
func frontMatterEnd(src []byte) int {
	first := lineEnd(src, 0)
	if string(bytes.TrimRight(src[:first], "\r\n")) != "---" {
		return 0
	}
	for i := first; i < len(src); {
		e := lineEnd(src, i)
		switch string(bytes.TrimRight(src[i:e], " \t\r\n")) {
		case "---", "...":
			return e
		}
		i = e
	}
	return 0
}

func lineStart(src []byte, pos int) int {
	return bytes.LastIndexByte(src[:pos], '\n') + 1
}

// lineEnd returns the offset just past the newline ending the line that
// holds pos, or len(src).
func lineEnd(src []byte, pos int) int {
	if pos >= len(src) {
		return len(src)
	}
	if i := bytes.IndexByte(src[pos:], '\n'); i >= 0 {
		return pos + i + 1
	}
	return len(src)
}

// isATX tells an ATX heading line ("## Title") from the first text line of
// a setext heading.
func isATX(line []byte) bool {
	i := 0
	for i < len(line) && i < 3 && line[i] == ' ' {
		i++
	}
	n := 0
	for i < len(line) && line[i] == '#' {
		i++
		n++
	}
	return n >= 1 && n <= 6 && (i == len(line) || line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n')
}

// headingText is what a reader sees of a heading: its text with markup and
// inline HTML (such as KeepMarker) dropped and whitespace collapsed, so
// restyling a heading does not make it another section.
func headingText(h *ast.Heading, src []byte) string {
	var b strings.Builder
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				b.Write(c.Segment.Value(src))
				if c.SoftLineBreak() || c.HardLineBreak() {
					b.WriteByte(' ')
				}
			case *ast.String:
				b.Write(c.Value)
			case *ast.RawHTML:
			default:
				walk(c)
			}
		}
	}
	walk(h)
	return strings.Join(strings.Fields(b.String()), " ")
}
