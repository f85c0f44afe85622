package configedit

import (
	"bytes"
	"strconv"
	"strings"
)

// The layout rules. An insertion follows its container: in a container
// whose last child sits on a line of its own, the new child gets a line of
// its own at that child's indentation, rendered over several lines with the
// file's unit of indentation; in a container written on one line, the new
// child goes on that line, rendered on one line. An empty container is
// opened over lines unless the whole document is written on one line.
// Removal is the inverse: a child on its own line goes with its line (its
// comma and a comment on the same line included), and the container that
// loses its last child closes up to "{}" or "[]" unless a comment remains.
// So an insertion undone by a removal gives the original bytes back.

// lineStart is the offset of the first byte of pos's line.
func (e *Editor) lineStart(pos int) int {
	return bytes.LastIndexByte(e.src[:pos], '\n') + 1
}

// ownLine reports whether only spaces and tabs precede pos on its line.
func (e *Editor) ownLine(pos int) bool {
	return len(strings.Trim(string(e.src[e.lineStart(pos):pos]), " \t")) == 0
}

// indentAt is the leading white space of pos's line.
func (e *Editor) indentAt(pos int) string {
	ls := e.lineStart(pos)
	end := ls
	for end < len(e.src) && (e.src[end] == ' ' || e.src[end] == '\t') {
		end++
	}
	return string(e.src[ls:end])
}

// tailEnd is where child i's line-tail ends: after its value, the spaces,
// its comma, and comments that close on the same line; the line break is
// not included.
func (e *Editor) tailEnd(n *Node, i int) int {
	pos, comma := n.childEnd(i), false
	for pos < len(e.src) {
		switch rest := e.src[pos:]; {
		case rest[0] == ' ' || rest[0] == '\t':
			pos++
		case rest[0] == ',' && !comma:
			comma = true
			pos++
		case bytes.HasPrefix(rest, []byte("//")):
			return lineEnd(e.src, pos)
		case bytes.HasPrefix(rest, []byte("/*")):
			end := bytes.Index(rest[2:], []byte("*/"))
			if end < 0 || bytes.ContainsAny(rest[:2+end], "\r\n") {
				return pos
			}
			pos += 2 + end + 2
		default:
			return pos
		}
	}
	return pos
}

// atLineEnd reports whether pos is at a line break (or the end).
func (e *Editor) atLineEnd(pos int) bool {
	return pos >= len(e.src) || e.src[pos] == '\n' || e.src[pos] == '\r'
}

// lineBreakBefore is the offset of the line break that ends the line
// before pos's line ("\r\n" counted whole).
func (e *Editor) lineBreakBefore(pos int) int {
	ls := e.lineStart(pos)
	if ls == 0 {
		return 0
	}
	if ls >= 2 && e.src[ls-2] == '\r' {
		return ls - 2
	}
	return ls - 1
}

// multiDoc reports whether the document spans several lines.
func (e *Editor) multiDoc() bool {
	return bytes.ContainsAny(e.src[e.root.Start:e.root.End], "\r\n")
}

// insert returns the splices that add a child at the end of n; text
// renders the child at an indentation, over lines or on one.
func (e *Editor) insert(n *Node, text func(indent string, multi bool) string) []splice {
	count := n.children()
	if count == 0 {
		open, closer := n.Start+1, n.End-1
		inner := string(e.src[open:closer])
		multi := n == e.root || e.multiDoc()
		outer := e.indentAt(n.Start)
		child := outer + e.unit
		if strings.TrimSpace(inner) != "" { // a comment inside: the child goes after it
			if i := lastBreak(inner); i >= 0 && multi {
				at := open + i
				if i > 0 && inner[i-1] == '\r' {
					at--
				}
				return []splice{{at: at, ins: e.nl + child + text(child, true)}}
			}
			return []splice{{at: closer, ins: text("", false) + " "}}
		}
		if !multi {
			return []splice{{at: open, del: len(inner), ins: text("", false)}}
		}
		return []splice{{at: open, del: len(inner), ins: e.nl + child + text(child, true) + e.nl + outer}}
	}
	last := count - 1
	tail := e.tailEnd(n, last)
	if e.ownLine(n.childStart(last)) && e.atLineEnd(tail) {
		indent := e.indentAt(n.childStart(last))
		child := text(indent, true)
		if n.Comma[last] >= 0 {
			return []splice{{at: tail, ins: e.nl + indent + child + ","}}
		}
		return []splice{{at: n.childEnd(last), ins: ","}, {at: tail, ins: e.nl + indent + child}}
	}
	sep := " "
	if count >= 2 && n.Comma[last-1] >= 0 {
		between := string(e.src[n.Comma[last-1]+1 : n.childStart(last)])
		if strings.Trim(between, " \t") == "" {
			sep = between
		}
	}
	if n.Comma[last] >= 0 {
		return []splice{{at: n.Comma[last] + 1, ins: sep + text("", false) + ","}}
	}
	return []splice{{at: n.childEnd(last), ins: "," + sep + text("", false)}}
}

// lastBreak is the offset of the last '\n' of inner, the inside of an
// empty container (white space and comments only), that is not inside a
// block comment; -1 when there is none. The one in "/*\n…*/" would put
// the new child inside the comment.
func lastBreak(inner string) int {
	last := -1
	for i := 0; i < len(inner); {
		switch rest := inner[i:]; {
		case strings.HasPrefix(rest, "//"):
			i = lineEnd([]byte(inner), i)
		case strings.HasPrefix(rest, "/*"):
			end := strings.Index(rest[2:], "*/")
			if end < 0 {
				return last
			}
			i += 2 + end + 2
		default:
			if rest[0] == '\n' {
				last = i
			}
			i++
		}
	}
	return last
}

// remove returns the splices that take child i out of n.
func (e *Editor) remove(n *Node, i int) []splice {
	start, tail := n.childStart(i), e.tailEnd(n, i)
	count := n.children()
	if count == 1 {
		open, closer := n.Start+1, n.End-1
		rest := string(e.src[open:start]) + string(e.src[tail:closer])
		if strings.TrimSpace(rest) == "" {
			return []splice{{at: open, del: closer - open}}
		}
	}
	if e.ownLine(start) && e.atLineEnd(tail) {
		from := e.lineBreakBefore(start)
		sp := []splice{{at: from, del: tail - from}}
		if i == count-1 && n.Comma[i] < 0 && i > 0 && n.Comma[i-1] >= 0 {
			// the file had no trailing comma: the new last child gets none
			sp = append(sp, splice{at: n.Comma[i-1], del: 1})
		}
		return sp
	}
	if i > 0 {
		// From the comma that ends the child before: what lies between that
		// child and its comma (a comment) is the child's, and stays.
		from := n.childEnd(i - 1)
		if c := n.Comma[i-1]; c >= 0 {
			from = c
		}
		return []splice{{at: from, del: n.childEnd(i) - from}}
	}
	if count > 1 {
		return []splice{{at: start, del: n.childStart(1) - start}}
	}
	return []splice{{at: start, del: tail - start}}
}

// render writes v: over lines at indent, or on one line.
func (e *Editor) render(v any, indent string, multi bool) string {
	if !multi {
		return e.renderCompact(v)
	}
	inner := indent + e.unit
	switch v := v.(type) {
	case Obj:
		if len(v) == 0 {
			return "{}"
		}
		var b strings.Builder
		b.WriteString("{")
		for i, f := range v {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(e.nl + inner + e.key(f.Key) + e.colon + e.render(f.Value, inner, true))
		}
		b.WriteString(e.nl + indent + "}")
		return b.String()
	case []any:
		if len(v) == 0 {
			return "[]"
		}
		var b strings.Builder
		b.WriteString("[")
		for i, x := range v {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(e.nl + inner + e.render(x, inner, true))
		}
		b.WriteString(e.nl + indent + "]")
		return b.String()
	}
	return e.renderCompact(v)
}

// renderCompact writes v on one line.
func (e *Editor) renderCompact(v any) string {
	switch v := v.(type) {
	case Obj:
		parts := make([]string, len(v))
		for i, f := range v {
			parts[i] = e.key(f.Key) + e.colon + e.renderCompact(f.Value)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = e.renderCompact(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return scalar(v)
}

// scalar writes a string, number, boolean or null.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case nil:
		return "null"
	}
	panic("configedit: cannot render a value of this type")
}
