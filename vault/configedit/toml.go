package configedit

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

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
