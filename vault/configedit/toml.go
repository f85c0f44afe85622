package configedit

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// TOML holds one TOML file being edited (Codex's config.toml) the way
// Editor holds a JSON one: the few lines of a change are spliced in and
// everything else stays byte for byte. The edits are the few an installer
// needs: a table appended at the end, a string value replaced in place, a
// table (with its sub-tables) or a key taken out. Each is made on the text
// and on the decoded document, and Bytes refuses text that does not decode
// (with github.com/BurntSushi/toml) to exactly the edited document.
type TOML struct {
	src   []byte
	lines []tomlLine
	model map[string]any
	nl    string
}

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

// NewTOML parses data. A missing or blank file is an empty document.
func NewTOML(data []byte) (*TOML, error) {
	model, err := decodeTOML(data)
	if err != nil {
		return nil, err
	}
	lines, err := scanTOML(data)
	if err != nil {
		return nil, fmt.Errorf("not TOML: %w", err)
	}
	t := &TOML{src: append([]byte(nil), data...), lines: lines, model: model, nl: "\n"}
	if bytes.Contains(data, []byte("\r\n")) {
		t.nl = "\r\n"
	}
	return t, nil
}

func decodeTOML(data []byte) (map[string]any, error) {
	m := map[string]any{}
	if _, err := toml.Decode(string(data), &m); err != nil {
		return nil, fmt.Errorf("not TOML: %s", oneLineErr(err))
	}
	return m, nil
}

// oneLineErr is the first line of a decoder's error (BurntSushi's may
// show the line at fault below it).
func oneLineErr(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// Value returns the decoded value at path (nil when missing).
func (t *TOML) Value(path ...string) any {
	var v any = t.model
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// AppendTable adds the table [path] with fields (strings and lists of
// strings) at the end of the file, after a blank line. The table must not
// be there.
func (t *TOML) AppendTable(path []string, fields Obj) error {
	if t.Value(path...) != nil {
		return fmt.Errorf("the table %s is there already", tomlKey(path))
	}
	// A table above it must be a table written as one: an inline table
	// (a = { … }) is closed to tables added later, though some decoders
	// let it pass.
	for n := 1; n < len(path); n++ {
		switch t.Value(path[:n]...).(type) {
		case nil, map[string]any:
		default:
			return fmt.Errorf("%s is not a table", tomlKey(path[:n]))
		}
		for _, l := range t.lines {
			if l.kind == tomlKeyVal && equalPath(l.key, path[:n]) {
				return fmt.Errorf("%s is an inline table, which cannot take the table %s", tomlKey(path[:n]), tomlKey(path))
			}
		}
	}
	body := []string{"[" + tomlKey(path) + "]"}
	for _, f := range fields {
		v, err := tomlValue(f.Value)
		if err != nil {
			return err
		}
		body = append(body, tomlKey([]string{f.Key})+" = "+v)
	}
	text := strings.Join(body, t.nl)
	var ins string
	switch {
	case len(t.src) == 0:
		ins = text + t.nl
	case bytes.HasSuffix(t.src, []byte("\n")):
		ins = t.nl + text + t.nl
	default:
		// A file without a final newline keeps having none: DeleteTable
		// takes the table and the line ending before it, and the file
		// ends where it ended.
		ins = t.nl + t.nl + text
	}
	snippet, err := decodeTOML([]byte(text))
	if err != nil {
		return fmt.Errorf("the table to add is not TOML (%v): a bug, please report it", err)
	}
	model := cloneTOML(t.model)
	setTOML(model, path, snippetAt(snippet, path))
	return t.apply(append(append([]byte(nil), t.src...), ins...), model)
}

// snippetAt is the value at path of a decoded snippet.
func snippetAt(m map[string]any, path []string) any {
	var v any = m
	for _, k := range path {
		v = v.(map[string]any)[k]
	}
	return v
}

// SetString replaces the value of key path, a string written on a line of
// its own (key = "…", under its table's header or as a dotted key), by s.
func (t *TOML) SetString(path []string, s string) error {
	cur, ok := t.Value(path...).(string)
	if !ok {
		return fmt.Errorf("%s is not a string", tomlKey(path))
	}
	if cur == s {
		return nil
	}
	var found *tomlLine
	for i := range t.lines {
		if l := &t.lines[i]; l.kind == tomlKeyVal && equalPath(l.key, path) {
			found = l
		}
	}
	if found == nil {
		return fmt.Errorf("%s is not written as key = \"value\" on a line of its own", tomlKey(path))
	}
	v, _ := tomlValue(s)
	text := append(append(append([]byte(nil), t.src[:found.val[0]]...), v...), t.src[found.val[1]:]...)
	model := cloneTOML(t.model)
	setTOML(model, path, s)
	return t.apply(text, model)
}

// SetStrings replaces the value of key path, a list of strings written
// as key = [ … ] (on its line, or over several), by l.
func (t *TOML) SetStrings(path []string, l []string) error {
	cur, ok := t.Value(path...).([]any)
	if !ok {
		return fmt.Errorf("%s is not a list", tomlKey(path))
	}
	if slices.Equal(cur, stringsToAny(l)) {
		return nil
	}
	var found *tomlLine
	for i := range t.lines {
		if ln := &t.lines[i]; ln.kind == tomlKeyVal && equalPath(ln.key, path) {
			found = ln
		}
	}
	if found == nil {
		return fmt.Errorf("%s is not written as key = [ … ]", tomlKey(path))
	}
	v, err := tomlValue(l)
	if err != nil {
		return err
	}
	text := append(append(append([]byte(nil), t.src[:found.val[0]]...), v...), t.src[found.val[1]:]...)
	model := cloneTOML(t.model)
	setTOML(model, path, stringsToAny(l))
	return t.apply(text, model)
}

func stringsToAny(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

// DeleteTable takes out what defines path: every table whose header is
// path or below it (a blank line before each header goes with it, as
// AppendTable put one there) and every key/value line whose key is path or
// below it.
func (t *TOML) DeleteTable(path []string) error {
	if t.Value(path...) == nil {
		return nil
	}
	type span struct{ from, to int }
	var cut []span
	for i := 0; i < len(t.lines); i++ {
		l := t.lines[i]
		switch {
		case (l.kind == tomlTable || l.kind == tomlArray) && hasPrefix(l.key, path):
			// The table runs to its last key/value line before the next
			// header: blank and comment lines after that belong to what
			// follows.
			end, j := l.end, i+1
			for ; j < len(t.lines) && t.lines[j].kind != tomlTable && t.lines[j].kind != tomlArray; j++ {
				if t.lines[j].kind == tomlKeyVal {
					end = t.lines[j].end
				}
			}
			from := l.start
			if i > 0 && t.lines[i-1].kind == tomlBlank && isBlankLine(t.src[t.lines[i-1].start:t.lines[i-1].end]) {
				from = t.lines[i-1].start // the blank line before the header
				if end == len(t.src) && !bytes.HasSuffix(t.src, []byte("\n")) {
					// at the end of a file without a final newline: the
					// line ending before the blank line goes too
					from -= lineEndingBefore(t.src, from)
				}
			}
			cut = append(cut, span{from, end})
			i = j - 1
		case l.kind == tomlKeyVal && hasPrefix(l.key, path):
			cut = append(cut, span{l.start, l.end})
		}
	}
	text := append([]byte(nil), t.src...)
	for i := len(cut) - 1; i >= 0; i-- {
		text = append(text[:cut[i].from:cut[i].from], text[cut[i].to:]...)
	}
	model := cloneTOML(t.model)
	deleteTOML(model, path)
	return t.apply(text, model)
}

// lineEndingBefore is the length of the line ending that ends just before
// at: 2 for \r\n, 1 for \n, 0 for none.
func lineEndingBefore(src []byte, at int) int {
	switch {
	case at >= 2 && src[at-2] == '\r' && src[at-1] == '\n':
		return 2
	case at >= 1 && src[at-1] == '\n':
		return 1
	}
	return 0
}

func isBlankLine(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// apply takes text as the file, checked to decode to model.
func (t *TOML) apply(text []byte, model map[string]any) error {
	lines, err := scanTOML(text)
	if err != nil {
		return fmt.Errorf("the edit broke the file (%v): a bug, please report it", err)
	}
	t.src, t.lines, t.model = text, lines, model
	return nil
}

// Bytes returns the edited file, checked to decode to exactly the edited
// document (tables left empty by a removal aside: an empty table and no
// table are the same to a reader).
func (t *TOML) Bytes() ([]byte, error) {
	got, err := decodeTOML(t.src)
	if err != nil {
		return nil, fmt.Errorf("the edit broke the file (%v): a bug, please report it", err)
	}
	if !reflect.DeepEqual(pruneEmpty(got), pruneEmpty(cloneTOML(t.model))) {
		return nil, errors.New("the edited text does not decode to the intended document: memvault cannot edit this layout")
	}
	return append([]byte(nil), t.src...), nil
}

// Empty reports whether nothing is left: what a file memvault created
// holds once its table is taken out.
func (t *TOML) Empty() bool { return len(t.src) == 0 }

func pruneEmpty(m map[string]any) map[string]any {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			if len(pruneEmpty(sub)) == 0 {
				delete(m, k)
			}
		}
	}
	return m
}

func cloneTOML(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = cloneTOML(sub)
		}
		out[k] = v
	}
	return out
}

func setTOML(m map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		sub, ok := m[k].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[k] = sub
		}
		m = sub
	}
	m[path[len(path)-1]] = v
}

func deleteTOML(m map[string]any, path []string) {
	for _, k := range path[:len(path)-1] {
		sub, ok := m[k].(map[string]any)
		if !ok {
			return
		}
		m = sub
	}
	delete(m, path[len(path)-1])
}

func equalPath(a, b []string) bool {
	return len(a) == len(b) && hasPrefix(a, b)
}

func hasPrefix(key, prefix []string) bool {
	if len(key) < len(prefix) {
		return false
	}
	for i := range prefix {
		if key[i] != prefix[i] {
			return false
		}
	}
	return true
}

// tomlKey writes a dotted key, each part bare when it may be.
func tomlKey(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = p
		if !isBareTOMLKey(p) {
			parts[i] = tomlString(p)
		}
	}
	return strings.Join(parts, ".")
}

func isBareTOMLKey(k string) bool {
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return k != ""
}

// tomlValue writes a string, an integer or a list of strings.
func tomlValue(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return tomlString(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return "", fmt.Errorf("a %T in a list", e)
			}
			parts[i] = tomlString(s)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case []string:
		l := make([]any, len(x))
		for i, s := range x {
			l[i] = s
		}
		return tomlValue(l)
	}
	return "", fmt.Errorf("cannot write a %T in TOML", v)
}

// tomlString writes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ---------------------------------------------------------------------------
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
