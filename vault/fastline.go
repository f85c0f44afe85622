package vault

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"

	"github.com/memvault/memvault/vault/canonical"
)

// The fast path of parseLine. A line memvault wrote is already in the
// canonical form (vault/canonical): keys sorted, no white space, strings as
// the encoder writes them. For such a line the canonical form of the event
// without its hash is the line with the "hash" member cut out, so the hash
// is checked without decoding the line into maps and encoding it again.
// lineScanner proves the line is canonical byte by byte and picks the
// event's fields on the way; anything it is not sure of (white space, keys
// out of order or repeated, a key that differs from a field's name only in
// case, a field of another type, an escape in a key) sends the line to the
// general path, which decides as before. FuzzFastLineMatchesSlow holds the
// two paths to the same answer.

// maxFastDepth bounds the nesting the fast path follows; deeper lines take
// the general path.
const maxFastDepth = 64

type lineScanner struct {
	b   []byte
	i   int
	buf bytes.Buffer // scratch for strings with escapes
	// chainOnly leaves out the fields verification does not read (agent,
	// session, harness, thread, text, source): they are checked and
	// hashed, not kept.
	chainOnly bool
}

// fastParseLine returns the event and whether its hash checks, with ok
// false when the line must take the general path.
func fastParseLine(line []byte) (ev *Event, hashOK bool, ok bool) {
	return fastParse(line, false)
}

// parseLineForChain is parseLine for verification: the event without
// the fields verification does not read (chainOnly), when the fast path
// takes the line.
func parseLineForChain(line []byte) (ev *Event, hashOK bool, err error) {
	if ev, ok, fast := fastParse(line, true); fast {
		return ev, ok, nil
	}
	return parseLineGeneral(line)
}

func fastParse(line []byte, chainOnly bool) (ev *Event, hashOK bool, ok bool) {
	s := lineScanner{b: line, chainOnly: chainOnly}
	if len(line) < 2 || line[0] != '{' {
		return nil, false, false
	}
	s.i = 1
	ev = new(Event)
	var prevKey []byte
	hashStart, hashEnd := -1, -1
	var stored []byte
	first := true
	for {
		if s.i >= len(s.b) {
			return nil, false, false
		}
		if s.b[s.i] == '}' {
			if !first {
				return nil, false, false // "{...,}"
			}
			s.i++
			break
		}
		memberStart := s.i
		key, simple, good := s.str()
		if !good || !simple || (prevKey != nil && bytes.Compare(key, prevKey) <= 0) {
			return nil, false, false
		}
		prevKey = key
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return nil, false, false
		}
		s.i++
		valStart := s.i
		if !s.value(0) {
			return nil, false, false
		}
		val := s.b[valStart:s.i]
		if !s.field(ev, key, val) {
			return nil, false, false
		}
		if string(key) == "hash" {
			if val[0] != '"' || bytes.IndexByte(val, '\\') >= 0 {
				return nil, false, false
			}
			stored = val[1 : len(val)-1]
			hashStart, hashEnd = memberStart, s.i
		}
		first = false
		if s.i >= len(s.b) {
			return nil, false, false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			continue
		case '}':
			s.i++
		default:
			return nil, false, false
		}
		break
	}
	if s.i != len(s.b) {
		return nil, false, false
	}
	if hashStart < 0 {
		return ev, false, true // no hash: the event, unverified
	}
	// Cut the member and one comma next to it out of the hashed bytes.
	if line[hashStart-1] == ',' {
		hashStart--
	} else if line[hashEnd] == ',' {
		hashEnd++
	}
	h := sha256.New()
	h.Write(line[:hashStart])
	h.Write(line[hashEnd:])
	var sum [sha256.Size]byte
	var hx [2 * sha256.Size]byte
	hex.Encode(hx[:], h.Sum(sum[:0]))
	return ev, len(stored) > 0 && bytes.Equal(hx[:], stored), true
}

// eventFields are the keys Event decodes, for the case-folding check.
var eventFields = [...]string{"id", "ts", "agent", "session", "harness", "kind", "thread", "text", "data", "links", "source", "prev", "hash"}

// field stores the value of a top-level member in ev the way
// json.Unmarshal would, or reports false when only json.Unmarshal can say
// what it does (a field of another type, null, a key that folds to a
// field's name).
func (s *lineScanner) field(ev *Event, key, val []byte) bool {
	var dst *string
	switch string(key) {
	case "id":
		dst = &ev.ID
	case "ts":
		dst = &ev.TS
	case "agent":
		dst = &ev.Agent
	case "session":
		dst = &ev.Session
	case "harness":
		dst = &ev.Harness
	case "kind":
		dst = &ev.Kind
	case "thread":
		dst = &ev.Thread
	case "text":
		dst = &ev.Text
	case "source":
		dst = &ev.Source
	case "prev":
		dst = &ev.Prev
	case "hash":
		dst = &ev.Hash
	case "data":
		if val[0] == 'n' {
			return false
		}
		ev.Data = append(json.RawMessage(nil), val...)
		return true
	case "links":
		return s.links(ev, val)
	default:
		for _, f := range eventFields {
			if bytes.EqualFold(key, []byte(f)) {
				return false
			}
		}
		return true // a key Event does not know: kept in the hash only
	}
	if val[0] != '"' {
		return false
	}
	if s.chainOnly && dst != &ev.ID && dst != &ev.TS && dst != &ev.Kind && dst != &ev.Prev && dst != &ev.Hash {
		return true // a string, as json.Unmarshal wants; not kept
	}
	str, ok := s.decoded(val)
	*dst = str
	return ok
}

// links decodes an array of strings.
func (s *lineScanner) links(ev *Event, val []byte) bool {
	if val[0] != '[' {
		return false
	}
	out := []string{}
	sub := lineScanner{b: val, i: 1}
	for sub.i < len(val) && val[sub.i] != ']' {
		start := sub.i
		if val[start] != '"' {
			return false
		}
		if _, _, ok := sub.str(); !ok {
			return false
		}
		str, ok := s.decoded(val[start:sub.i])
		if !ok {
			return false
		}
		out = append(out, str)
		if sub.i < len(val) && val[sub.i] == ',' {
			sub.i++
		}
	}
	ev.Links = out
	return true
}

// decoded returns the value of a canonical string token.
func (s *lineScanner) decoded(tok []byte) (string, bool) {
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
func (s *lineScanner) value(depth int) bool {
	if s.i >= len(s.b) || depth > maxFastDepth {
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

func (s *lineScanner) lit(w string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		return false
	}
	s.i += len(w)
	return true
}

// number scans a number as JSON's grammar has it; canonical form keeps
// numbers as written.
func (s *lineScanner) number() bool {
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
func (s *lineScanner) str() (content []byte, simple, ok bool) {
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
	canonical.WriteString(&s.buf, val)
	return content, false, bytes.Equal(s.buf.Bytes(), tok)
}
