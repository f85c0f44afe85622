package canonical

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Scanning a line already in canonical form. A line memvault wrote is
// canonical: for such a line the canonical form of an object less one
// member is the line with that member cut out, so a hash over it is
// checked without decoding the line into maps and encoding it again.
// The scanner proves the line canonical byte by byte; anything it is not
// sure of (white space, keys out of order or repeated, an escape in a
// key, a string the encoder would write otherwise) makes it answer false,
// and the caller takes the general path.

// maxScanDepth bounds the nesting the scanner follows; deeper lines take
// the general path.
const maxScanDepth = 64

type scanner struct {
	b   []byte
	i   int
	buf bytes.Buffer // scratch for strings with escapes
}

// ScanObject reports whether line is one JSON object in canonical form,
// calling member for each top-level member in order with its key (never
// escaped), its value's bytes, and the member's start and end offsets in
// line. It stops with false as soon as member does.
func ScanObject(line []byte, member func(key, val []byte, start, end int) bool) bool {
	s := scanner{b: line}
	if len(line) < 2 || line[0] != '{' {
		return false
	}
	s.i = 1
	var prevKey []byte
	first := true
	for {
		if s.i >= len(s.b) {
			return false
		}
		if s.b[s.i] == '}' {
			if !first {
				return false // "{...,}"
			}
			s.i++
			break
		}
		memberStart := s.i
		key, simple, good := s.str()
		if !good || !simple || (prevKey != nil && bytes.Compare(key, prevKey) <= 0) {
			return false
		}
		prevKey = key
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		valStart := s.i
		if !s.value(0) || !member(key, s.b[valStart:s.i], memberStart, s.i) {
			return false
		}
		first = false
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			continue
		case '}':
			s.i++
		default:
			return false
		}
		break
	}
	return s.i == len(s.b)
}

// Strings decodes val, a canonical array of strings; false when it is
// not one.
func Strings(val []byte) ([]string, bool) {
	if len(val) == 0 || val[0] != '[' {
		return nil, false
	}
	out := []string{}
	sub := scanner{b: val, i: 1}
	for sub.i < len(val) && val[sub.i] != ']' {
		start := sub.i
		if val[start] != '"' {
			return nil, false
		}
		if _, _, ok := sub.str(); !ok {
			return nil, false
		}
		str, ok := Unquote(val[start:sub.i])
		if !ok {
			return nil, false
		}
		out = append(out, str)
		if sub.i < len(val) && val[sub.i] == ',' {
			sub.i++
		}
	}
	return out, true
}

// Unquote returns the value of a canonical string token.
func Unquote(tok []byte) (string, bool) {
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1]), true
	}
	var str string
	if json.Unmarshal(tok, &str) != nil {
		return "", false
	}
	return str, true
}

// value scans one canonical JSON value.
func (s *scanner) value(depth int) bool {
	if s.i >= len(s.b) || depth > maxScanDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == '{':
		s.i++
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return true
		}
		var prev []byte
		for {
			key, simple, ok := s.str()
			if !ok || !simple || (prev != nil && bytes.Compare(key, prev) <= 0) {
				return false
			}
			prev = key
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return false
			}
			s.i++
			if !s.value(depth + 1) {
				return false
			}
			if s.i >= len(s.b) {
				return false
			}
			if s.b[s.i] == '}' {
				s.i++
				return true
			}
			if s.b[s.i] != ',' {
				return false
			}
			s.i++
		}
	case c == '[':
		s.i++
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return true
		}
		for {
			if !s.value(depth + 1) {
				return false
			}
			if s.i >= len(s.b) {
				return false
			}
			if s.b[s.i] == ']' {
				s.i++
				return true
			}
			if s.b[s.i] != ',' {
				return false
			}
			s.i++
		}
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return false
}

func (s *scanner) lit(w string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		return false
	}
	s.i += len(w)
	return true
}

// number scans a number as JSON's grammar has it; canonical form keeps
// numbers as written.
func (s *scanner) number() bool {
	b, i := s.b, s.i
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	s.i = i
	return true
}

// str scans a string token in canonical form and returns its content
// between the quotes. simple reports that the content is its own value
// (no escape); a string with escapes is canonical when the encoder writes
// its value back to the same bytes.
func (s *scanner) str() (content []byte, simple, ok bool) {
	b := s.b
	if s.i >= len(b) || b[s.i] != '"' {
		return nil, false, false
	}
	start := s.i + 1
	i := start
	simple = true
	for {
		if i >= len(b) {
			return nil, false, false
		}
		c := b[i]
		if c == '"' {
			break
		}
		if c == '\\' {
			simple = false
			i += 2 // the escaped byte is never the closing quote
			continue
		}
		if c < 0x20 {
			return nil, false, false // canonical form escapes it
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
				return nil, false, false // the encoder writes these escaped
			}
			i += n
			continue
		}
		i++
	}
	content = b[start:i]
	s.i = i + 1
	if simple {
		return content, true, true
	}
	tok := b[start-1 : s.i]
	var val string
	if json.Unmarshal(tok, &val) != nil {
		return nil, false, false
	}
	s.buf.Reset()
	WriteString(&s.buf, val)
	return content, false, bytes.Equal(s.buf.Bytes(), tok)
}
