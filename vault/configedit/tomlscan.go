package configedit

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tomlLine is one logical line of a TOML file: a table header, a key and
// its value (which may run over several lines), or a blank or comment line.
type tomlLine struct {
	start, end int // the line's bytes, its line ending included
	kind       tomlKind
	key        []string // a header's table, a key/value's whole key (its table's path and its own)
	val        [2]int   // a key/value's value: [start, end)
}

type tomlKind int

const (
	tomlBlank tomlKind = iota // blank or only a comment
	tomlTable                 // [table]
	tomlArray                 // [[array of tables]]
	tomlKeyVal
)

// The scanner: logical lines, keys and value spans. It trusts the decoder,
// which has read the file first, for what is valid; it only has to find
// where things are.

type tomlScanner struct {
	src []byte
	i   int
}

func scanTOML(src []byte) ([]tomlLine, error) {
	s := &tomlScanner{src: src}
	var out []tomlLine
	var table []string
	for s.i < len(src) {
		l := tomlLine{start: s.i}
		s.spaces()
		switch {
		case s.eol():
			l.kind = tomlBlank
		case s.peek() == '#':
			s.comment()
			l.kind = tomlBlank
		case s.peek() == '[':
			s.i++
			l.kind = tomlTable
			if s.peek() == '[' {
				s.i++
				l.kind = tomlArray
			}
			s.spaces()
			key, err := s.key()
			if err != nil {
				return nil, err
			}
			s.spaces()
			closing := "]"
			if l.kind == tomlArray {
				closing = "]]"
			}
			if !bytes.HasPrefix(src[s.i:], []byte(closing)) {
				return nil, fmt.Errorf("offset %d: a table header without its %s", s.i, closing)
			}
			s.i += len(closing)
			l.key, table = key, key
		default:
			key, err := s.key()
			if err != nil {
				return nil, err
			}
			s.spaces()
			if s.peek() != '=' {
				return nil, fmt.Errorf("offset %d: a key without =", s.i)
			}
			s.i++
			s.spaces()
			l.val[0] = s.i
			if err := s.value(); err != nil {
				return nil, err
			}
			l.val[1] = s.i
			l.kind = tomlKeyVal
			l.key = append(append([]string(nil), table...), key...)
		}
		s.spaces()
		if s.peek() == '#' {
			s.comment()
		}
		if !s.eol() {
			return nil, fmt.Errorf("offset %d: more after a value on its line", s.i)
		}
		s.newline()
		l.end = s.i
		out = append(out, l)
	}
	return out, nil
}

func (s *tomlScanner) peek() byte {
	if s.i < len(s.src) {
		return s.src[s.i]
	}
	return 0
}

func (s *tomlScanner) spaces() {
	for s.i < len(s.src) && (s.src[s.i] == ' ' || s.src[s.i] == '\t') {
		s.i++
	}
}

// eol reports whether the line ends here (or the file does).
func (s *tomlScanner) eol() bool {
	return s.i >= len(s.src) || s.src[s.i] == '\n' || s.src[s.i] == '\r' && s.i+1 < len(s.src) && s.src[s.i+1] == '\n'
}

func (s *tomlScanner) newline() {
	if s.i < len(s.src) && s.src[s.i] == '\r' {
		s.i++
	}
	if s.i < len(s.src) && s.src[s.i] == '\n' {
		s.i++
	}
}

func (s *tomlScanner) comment() {
	for !s.eol() {
		s.i++
	}
}

// gap skips white space, newlines and comments (inside an array, or an
// inline table in TOML 1.1).
func (s *tomlScanner) gap() {
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		case '#':
			s.comment()
		default:
			return
		}
	}
}

// key reads a dotted key: bare or quoted parts, white space around dots.
func (s *tomlScanner) key() ([]string, error) {
	var parts []string
	for {
		var part string
		switch c := s.peek(); {
		case c == '"' || c == '\'':
			start := s.i
			if err := s.str(); err != nil {
				return nil, err
			}
			v, err := unquoteTOML(string(s.src[start:s.i]))
			if err != nil {
				return nil, err
			}
			part = v
		default:
			start := s.i
			for s.i < len(s.src) && isBareByte(s.src[s.i]) {
				s.i++
			}
			if s.i == start {
				return nil, fmt.Errorf("offset %d: a key expected", s.i)
			}
			part = string(s.src[start:s.i])
		}
		parts = append(parts, part)
		save := s.i
		s.spaces()
		if s.peek() != '.' {
			s.i = save
			return parts, nil
		}
		s.i++
		s.spaces()
	}
}

func isBareByte(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// value skips one value.
func (s *tomlScanner) value() error {
	switch s.peek() {
	case '"', '\'':
		return s.str()
	case '[':
		s.i++
		for {
			s.gap()
			if s.peek() == ']' {
				s.i++
				return nil
			}
			if s.i >= len(s.src) {
				return errors.New("an array without its ]")
			}
			if err := s.value(); err != nil {
				return err
			}
			s.gap()
			if s.peek() == ',' {
				s.i++
			}
		}
	case '{':
		s.i++
		for {
			s.gap()
			if s.peek() == '}' {
				s.i++
				return nil
			}
			if s.i >= len(s.src) {
				return errors.New("an inline table without its }")
			}
			if _, err := s.key(); err != nil {
				return err
			}
			s.spaces()
			if s.peek() != '=' {
				return fmt.Errorf("offset %d: a key without =", s.i)
			}
			s.i++
			s.spaces()
			if err := s.value(); err != nil {
				return err
			}
			s.gap()
			if s.peek() == ',' {
				s.i++
			}
		}
	}
	// a number, a boolean, a date or time (a date and a time may stand
	// apart by one space)
	start := s.i
	for s.i < len(s.src) && !strings.ContainsRune(" \t\r\n,]}#", rune(s.src[s.i])) {
		s.i++
	}
	if s.i-start == 10 && s.src[start+4] == '-' && s.i+1 < len(s.src) && s.src[s.i] == ' ' && s.src[s.i+1] >= '0' && s.src[s.i+1] <= '9' {
		s.i++
		for s.i < len(s.src) && !strings.ContainsRune(" \t\r\n,]}#", rune(s.src[s.i])) {
			s.i++
		}
	}
	if s.i == start {
		return fmt.Errorf("offset %d: a value expected", s.i)
	}
	return nil
}

// str skips a string of any of the four kinds.
func (s *tomlScanner) str() error {
	q := s.src[s.i]
	if bytes.HasPrefix(s.src[s.i:], []byte{q, q, q}) {
		s.i += 3
		for s.i < len(s.src) {
			switch {
			case q == '"' && s.src[s.i] == '\\':
				s.i += 2
			case bytes.HasPrefix(s.src[s.i:], []byte{q, q, q}):
				s.i += 3
				// up to two more quotes belong to the string's text
				for n := 0; n < 2 && s.peek() == q; n++ {
					s.i++
				}
				return nil
			default:
				s.i++
			}
		}
		return errors.New("a multi-line string without its end")
	}
	s.i++
	for s.i < len(s.src) && s.src[s.i] != '\n' {
		switch {
		case q == '"' && s.src[s.i] == '\\':
			s.i += 2
		case s.src[s.i] == q:
			s.i++
			return nil
		default:
			s.i++
		}
	}
	return errors.New("a string without its end")
}

// unquoteTOML reads a quoted key: a literal one as it is, a basic one with
// its escapes.
func unquoteTOML(q string) (string, error) {
	if q[0] == '\'' {
		return q[1 : len(q)-1], nil
	}
	body := q[1 : len(q)-1]
	var b strings.Builder
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			_, size := utf8.DecodeRuneInString(body[i:])
			b.WriteString(body[i : i+size])
			i += size
			continue
		}
		if i+1 >= len(body) {
			return "", errors.New("a bad escape in a key")
		}
		esc := body[i+1]
		i += 2
		n := 0
		switch esc {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte(0x1b)
		case '"':
			b.WriteByte('"')
		case '\\':
			b.WriteByte('\\')
		case 'x':
			n = 2
		case 'u':
			n = 4
		case 'U':
			n = 8
		default:
			return "", fmt.Errorf("a bad escape \\%c in a key", esc)
		}
		if n > 0 {
			if i+n > len(body) {
				return "", errors.New("a bad escape in a key")
			}
			r, err := strconv.ParseUint(body[i:i+n], 16, 32)
			if err != nil {
				return "", errors.New("a bad escape in a key")
			}
			b.WriteRune(rune(r))
			i += n
		}
	}
	return b.String(), nil
}
