package configedit

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is the kind of a value in a config file.
type Kind int

// The kinds of values.
const (
	Object Kind = iota
	Array
	String
	Number
	Literal // true, false, null
)

// Node is one value of a parsed file: where it lies in the bytes and, for
// containers, its children. The spans are what an edit splices; nothing is
// re-encoded.
type Node struct {
	Kind       Kind
	Start, End int // the value's bytes: [Start, End)
	Str        string
	Members    []Member // Object
	Elems      []*Node  // Array
	// Comma[i] is the offset of the comma after child i, or -1.
	Comma []int
}

// Member is one key of an object and its value.
type Member struct {
	Key      string
	KeyStart int
	Colon    int // the offset of the ':'
	Value    *Node
}

// children returns the number of members or elements.
func (n *Node) children() int {
	if n.Kind == Object {
		return len(n.Members)
	}
	return len(n.Elems)
}

// childStart is where child i begins: its key for a member.
func (n *Node) childStart(i int) int {
	if n.Kind == Object {
		return n.Members[i].KeyStart
	}
	return n.Elems[i].Start
}

// childEnd is where child i's value ends.
func (n *Node) childEnd(i int) int {
	if n.Kind == Object {
		return n.Members[i].Value.End
	}
	return n.Elems[i].End
}

// Get returns the value of key, the last one when the key repeats (as
// every JSON decoder reads it), and its index.
func (n *Node) Get(key string) (*Node, int) {
	if n == nil || n.Kind != Object {
		return nil, -1
	}
	for i := len(n.Members) - 1; i >= 0; i-- {
		if n.Members[i].Key == key {
			return n.Members[i].Value, i
		}
	}
	return nil, -1
}

// count is how many members are named key.
func (n *Node) count(key string) int {
	c := 0
	for _, m := range n.Members {
		if m.Key == key {
			c++
		}
	}
	return c
}

// scanner reads the JSON5 grammar, a superset of JSON with comments and
// trailing commas: which of those a file may use is the decoder's check
// (Open), done first; the scanner only finds the spans.
type scanner struct {
	src []byte
	pos int
}

// SyntaxError is a place in the file the scanner could not read.
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

func (s *scanner) fail(format string, args ...any) error {
	line, col := 1, 1
	for _, b := range s.src[:min(s.pos, len(s.src))] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &SyntaxError{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// parse reads one whole document: a value between optional space and
// comments.
func parse(src []byte) (*Node, error) {
	s := &scanner{src: src}
	if err := s.space(); err != nil {
		return nil, err
	}
	n, err := s.value(0)
	if err != nil {
		return nil, err
	}
	if err := s.space(); err != nil {
		return nil, err
	}
	if s.pos != len(src) {
		return nil, s.fail("unexpected %q after the value", s.peekRune())
	}
	return n, nil
}

func (s *scanner) peekRune() rune {
	r, _ := utf8.DecodeRune(s.src[s.pos:])
	return r
}

// isSpace is JSON5's white space: JSON's, and the Unicode spaces and line
// terminators JavaScript allows.
func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\v', '\f', 0xA0, 0xFEFF, 0x2028, 0x2029:
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// space skips white space and comments.
func (s *scanner) space() error {
	for s.pos < len(s.src) {
		rest := s.src[s.pos:]
		switch {
		case len(rest) >= 2 && rest[0] == '/' && rest[1] == '/':
			s.pos = lineEnd(s.src, s.pos)
		case len(rest) >= 2 && rest[0] == '/' && rest[1] == '*':
			end := strings.Index(string(rest[2:]), "*/")
			if end < 0 {
				return s.fail("unterminated /* comment")
			}
			s.pos += 2 + end + 2
		default:
			r, size := utf8.DecodeRune(rest)
			if !isSpace(r) {
				return nil
			}
			s.pos += size
		}
	}
	return nil
}

// lineEnd is the offset of the line terminator at or after pos (or the end).
func lineEnd(src []byte, pos int) int {
	for pos < len(src) {
		r, size := utf8.DecodeRune(src[pos:])
		if r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029 {
			return pos
		}
		pos += size
	}
	return pos
}

// maxDepth bounds nesting, so a hostile file cannot exhaust the stack.
const maxDepth = 1000

func (s *scanner) value(depth int) (*Node, error) {
	if depth > maxDepth {
		return nil, s.fail("nested too deeply")
	}
	if s.pos >= len(s.src) {
		return nil, s.fail("unexpected end of file")
	}
	switch c := s.src[s.pos]; {
	case c == '{':
		return s.container(Object, '}', depth)
	case c == '[':
		return s.container(Array, ']', depth)
	case c == '"' || c == '\'':
		start := s.pos
		str, err := s.str()
		if err != nil {
			return nil, err
		}
		return &Node{Kind: String, Start: start, End: s.pos, Str: str}, nil
	default:
		start := s.pos
		word := s.word()
		if word == "" {
			return nil, s.fail("unexpected %q", s.peekRune())
		}
		switch word {
		case "true", "false", "null":
			return &Node{Kind: Literal, Start: start, End: s.pos, Str: word}, nil
		}
		if !isNumber(word) {
			s.pos = start
			return nil, s.fail("unexpected %q", word)
		}
		return &Node{Kind: Number, Start: start, End: s.pos, Str: word}, nil
	}
}

// word reads a run of identifier or number characters.
func (s *scanner) word() string {
	start := s.pos
	for s.pos < len(s.src) {
		r, size := utf8.DecodeRune(s.src[s.pos:])
		if !(r == '_' || r == '$' || r == '.' || r == '+' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			break
		}
		// a sign only leads a number or follows an exponent
		if (r == '+' || r == '-') && s.pos > start && s.src[s.pos-1] != 'e' && s.src[s.pos-1] != 'E' {
			break
		}
		s.pos += size
	}
	return string(s.src[start:s.pos])
}

// isNumber accepts JSON5's numbers: decimal (with a leading or trailing
// point), hexadecimal, Infinity and NaN, each with an optional sign.
func isNumber(w string) bool {
	w = strings.TrimLeft(w, "+-")
	if len(w) == 0 {
		return false
	}
	switch {
	case w == "Infinity" || w == "NaN":
		return true
	case len(w) > 2 && (w[:2] == "0x" || w[:2] == "0X"):
		_, err := strconv.ParseUint(w[2:], 16, 64)
		return err == nil || errorsIsRange(err)
	}
	if w == "." {
		return false
	}
	_, err := strconv.ParseFloat(w, 64)
	return err == nil || errorsIsRange(err)
}

func errorsIsRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func (s *scanner) container(kind Kind, closer byte, depth int) (*Node, error) {
	n := &Node{Kind: kind, Start: s.pos}
	s.pos++
	for {
		if err := s.space(); err != nil {
			return nil, err
		}
		if s.pos >= len(s.src) {
			return nil, s.fail("unexpected end of file: missing %q", closer)
		}
		if s.src[s.pos] == closer {
			s.pos++
			n.End = s.pos
			return n, nil
		}
		if len(n.Comma) > 0 && n.Comma[len(n.Comma)-1] < 0 {
			return nil, s.fail("want ',' or %q, found %q", closer, s.peekRune())
		}
		if kind == Object {
			keyStart := s.pos
			key, err := s.key()
			if err != nil {
				return nil, err
			}
			if err := s.space(); err != nil {
				return nil, err
			}
			if s.pos >= len(s.src) || s.src[s.pos] != ':' {
				return nil, s.fail("want ':' after the key %q", key)
			}
			colon := s.pos
			s.pos++
			if err := s.space(); err != nil {
				return nil, err
			}
			v, err := s.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Members = append(n.Members, Member{Key: key, KeyStart: keyStart, Colon: colon, Value: v})
		} else {
			v, err := s.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Elems = append(n.Elems, v)
		}
		if err := s.space(); err != nil {
			return nil, err
		}
		comma := -1
		if s.pos < len(s.src) && s.src[s.pos] == ',' {
			comma = s.pos
			s.pos++
		}
		n.Comma = append(n.Comma, comma)
	}
}

// key reads an object key: a string or a JSON5 identifier.
func (s *scanner) key() (string, error) {
	if s.pos < len(s.src) && (s.src[s.pos] == '"' || s.src[s.pos] == '\'') {
		return s.str()
	}
	var b strings.Builder
	for s.pos < len(s.src) {
		if s.src[s.pos] == '\\' {
			if s.pos+1 >= len(s.src) || s.src[s.pos+1] != 'u' {
				return "", s.fail("bad escape in a key")
			}
			s.pos += 2
			r, err := s.hex(4)
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
			continue
		}
		r, size := utf8.DecodeRune(s.src[s.pos:])
		if !(r == '_' || r == '$' || unicode.IsLetter(r) || b.Len() > 0 && (unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc)) || r == 0x200C || r == 0x200D) {
			break
		}
		b.WriteRune(r)
		s.pos += size
	}
	if b.Len() == 0 {
		return "", s.fail("want a key, found %q", s.peekRune())
	}
	return b.String(), nil
}

// str reads a string in double or single quotes and returns its value.
func (s *scanner) str() (string, error) {
	quote := s.src[s.pos]
	s.pos++
	var b strings.Builder
	for {
		if s.pos >= len(s.src) {
			return "", s.fail("unterminated string")
		}
		c := s.src[s.pos]
		switch {
		case c == quote:
			s.pos++
			return b.String(), nil
		case c == '\n' || c == '\r':
			return "", s.fail("line break inside a string")
		case c == '\\':
			if err := s.escape(&b); err != nil {
				return "", err
			}
		default:
			r, size := utf8.DecodeRune(s.src[s.pos:])
			b.WriteRune(r)
			s.pos += size
		}
	}
}

// escape reads one backslash escape (JSON's and JSON5's) into b.
func (s *scanner) escape(b *strings.Builder) error {
	s.pos++ // the backslash
	if s.pos >= len(s.src) {
		return s.fail("unterminated string")
	}
	c := s.src[s.pos]
	s.pos++
	simple := map[byte]rune{'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v', '0': 0}
	switch {
	case c == 'u':
		r, err := s.hex(4)
		if err != nil {
			return err
		}
		if utf16Surrogate(r) && s.pos+1 < len(s.src) && s.src[s.pos] == '\\' && s.src[s.pos+1] == 'u' {
			save := s.pos
			s.pos += 2
			if r2, err := s.hex(4); err == nil && r2 >= 0xDC00 && r2 <= 0xDFFF {
				r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
			} else {
				s.pos = save
			}
		}
		b.WriteRune(r)
	case c == 'x':
		r, err := s.hex(2)
		if err != nil {
			return err
		}
		b.WriteRune(r)
	case c == '\r':
		if s.pos < len(s.src) && s.src[s.pos] == '\n' {
			s.pos++
		}
	case c == '\n':
	case c == '0' && s.pos < len(s.src) && s.src[s.pos] >= '0' && s.src[s.pos] <= '9':
		return s.fail("octal escape in a string")
	case simple[c] != 0 || c == '0':
		b.WriteRune(simple[c])
	default:
		s.pos--
		r, size := utf8.DecodeRune(s.src[s.pos:])
		if r == 0x2028 || r == 0x2029 {
			s.pos += size // a line continuation
			return nil
		}
		b.WriteRune(r)
		s.pos += size
	}
	return nil
}

func utf16Surrogate(r rune) bool { return r >= 0xD800 && r <= 0xDBFF }

func (s *scanner) hex(n int) (rune, error) {
	if s.pos+n > len(s.src) {
		return 0, s.fail("short hex escape")
	}
	v, err := strconv.ParseUint(string(s.src[s.pos:s.pos+n]), 16, 32)
	if err != nil {
		return 0, s.fail("bad hex escape %q", s.src[s.pos:s.pos+n])
	}
	s.pos += n
	return rune(v), nil
}
