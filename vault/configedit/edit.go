// Package configedit edits a harness's JSON, JSONC or JSON5 config file the
// way a person would by hand: the few bytes of the change are spliced in
// and everything else (comments, key order, indentation, line endings, a
// byte-order mark, trailing commas, quoting) stays byte for byte.
//
// Every edit is made twice: as text, on the spans the scanner found, and on
// the decoded document. Bytes decodes the edited text with the dialect's own
// decoder (github.com/tailscale/hujson for JSONC, github.com/titanous/json5
// for JSON5) and refuses to return it unless it is exactly the edited
// document: a layout the splicing gets wrong is an error, never a file that
// means something else.
package configedit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/tailscale/hujson"
	"github.com/titanous/json5"
)

// Dialect is the syntax a file is read and checked in.
type Dialect int

// The dialects.
const (
	// JSONC is JSON with // and /* */ comments and trailing commas (Claude
	// Code, Codex and Gemini CLI settings).
	JSONC Dialect = iota
	// JSON5 adds unquoted keys, single quotes, hexadecimal numbers and
	// more (OpenClaw's config).
	JSON5
)

func (d Dialect) String() string { return map[Dialect]string{JSONC: "JSONC", JSON5: "JSON5"}[d] }

// Obj is an object with its keys in order, for values an edit inserts.
type Obj []Field

// Field is one key of an Obj.
type Field struct {
	Key   string
	Value any
}

// Editor holds one file being edited.
type Editor struct {
	dialect Dialect
	bom     []byte
	src     []byte // the text, without the byte-order mark
	root    *Node
	model   any // the decoded document, edited alongside the text
	nl      string
	unit    string // one level of indentation
	colon   string // what follows a key: ":" or ": "
	bare    bool   // JSON5 written with unquoted keys: new keys follow
	blank   bool   // no file, or only white space
}

var bomBytes = []byte{0xEF, 0xBB, 0xBF}

// New parses data. A missing or blank file (nil or white space) is an empty
// object, written from scratch by the first edit. The top level must be an
// object.
func New(data []byte, d Dialect) (*Editor, error) {
	e := &Editor{dialect: d, nl: "\n", unit: "  ", colon: ": "}
	if bytes.HasPrefix(data, bomBytes) {
		e.bom, data = bomBytes, data[len(bomBytes):]
	}
	if len(bytes.TrimSpace(data)) == 0 {
		e.blank, data = true, []byte("{}")
	}
	model, err := decode(data, d)
	if err != nil {
		return nil, err
	}
	root, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("not %s: %w", d, err)
	}
	if root.Kind != Object {
		return nil, errors.New("the top level is not an object")
	}
	e.src, e.root, e.model = append([]byte(nil), data...), root, model
	if bytes.Contains(data, []byte("\r\n")) {
		e.nl = "\r\n"
	}
	e.detectStyle(root)
	return e, nil
}

// decode reads data with the dialect's own decoder.
func decode(data []byte, d Dialect) (any, error) {
	var v any
	switch d {
	case JSON5:
		if err := json5.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("not JSON5: %v", err)
		}
	default:
		std, err := hujson.Standardize(append([]byte(nil), data...))
		if err != nil {
			return nil, fmt.Errorf("not JSON (comments and trailing commas allowed): %v", err)
		}
		if err := json.Unmarshal(std, &v); err != nil {
			return nil, fmt.Errorf("not JSON: %v", err)
		}
	}
	return v, nil
}

// detectStyle takes the indentation unit and the space after a key's colon
// from the first place the file shows them.
func (e *Editor) detectStyle(root *Node) {
	unitFound, colonFound := false, false
	var walk func(n *Node)
	walk = func(n *Node) {
		if n.Kind != Object && n.Kind != Array {
			return
		}
		if !unitFound && n.children() > 0 && e.ownLine(n.childStart(0)) {
			outer, inner := e.indentAt(n.Start), e.indentAt(n.childStart(0))
			if len(inner) > len(outer) && strings.HasPrefix(inner, outer) {
				e.unit, unitFound = inner[len(outer):], true
			}
		}
		for i := 0; i < n.children(); i++ {
			if n.Kind == Object {
				m := n.Members[i]
				if !colonFound {
					e.colon, colonFound = ":", true
					e.bare = e.dialect == JSON5 && e.src[m.KeyStart] != '"' && e.src[m.KeyStart] != '\''
					if m.Colon+1 < len(e.src) && e.src[m.Colon+1] == ' ' {
						e.colon = ": "
					}
				}
				walk(m.Value)
			} else {
				walk(n.Elems[i])
			}
		}
	}
	walk(root)
}

// Blank reports whether the file was missing or blank.
func (e *Editor) Blank() bool { return e.blank }

// Find walks path (object keys as strings, array indexes as ints) from the
// top and returns the value there, or nil when some step is missing or of
// another kind. A key that repeats on the way is an error: the decoders
// read the last, a person may have meant the first.
func (e *Editor) Find(path ...any) (*Node, error) {
	n := e.root
	for i, step := range path {
		switch s := step.(type) {
		case string:
			if n.Kind != Object {
				return nil, nil
			}
			if n.count(s) > 1 {
				return nil, fmt.Errorf("the key %s repeats", pathString(path[:i+1]))
			}
			n, _ = n.Get(s)
		case int:
			if n.Kind != Array || s < 0 || s >= len(n.Elems) {
				return nil, nil
			}
			n = n.Elems[s]
		}
		if n == nil {
			return nil, nil
		}
	}
	return n, nil
}

func pathString(path []any) string {
	var b strings.Builder
	for _, s := range path {
		switch s := s.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s)
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		}
	}
	return fmt.Sprintf("%q", b.String())
}

// container finds the object or array at path for an edit.
func (e *Editor) container(path []any, kind Kind) (*Node, error) {
	n, err := e.Find(path...)
	if err != nil {
		return nil, err
	}
	if n == nil || n.Kind != kind {
		return nil, fmt.Errorf("%s is not an %s", pathString(path), map[Kind]string{Object: "object", Array: "array"}[kind])
	}
	return n, nil
}

// Set sets key of the object at path to v: the value replaced in place
// when the key is there, else a member added at the end.
func (e *Editor) Set(path []any, key string, v any) error {
	obj, err := e.container(path, Object)
	if err != nil {
		return err
	}
	if obj.count(key) > 1 {
		return fmt.Errorf("the key %s repeats", pathString(append(append([]any{}, path...), key)))
	}
	var sp []splice
	if old, _ := obj.Get(key); old != nil {
		multi := bytes.ContainsAny(e.src[old.Start:old.End], "\r\n")
		sp = []splice{{at: old.Start, del: old.End - old.Start, ins: e.render(v, e.indentAt(old.Start), multi)}}
	} else {
		sp = e.insert(obj, func(indent string, multi bool) string {
			return e.key(key) + e.colon + e.render(v, indent, multi)
		})
	}
	return e.apply(sp, path, func(c any) (any, error) {
		m, _ := c.(map[string]any)
		m[key] = normalize(v)
		return m, nil
	})
}

// Append adds v at the end of the array at path.
func (e *Editor) Append(path []any, v any) error {
	arr, err := e.container(path, Array)
	if err != nil {
		return err
	}
	sp := e.insert(arr, func(indent string, multi bool) string { return e.render(v, indent, multi) })
	return e.apply(sp, path, func(c any) (any, error) {
		l, _ := c.([]any)
		return append(l, normalize(v)), nil
	})
}

// Delete removes a member (key a string) or an element (key an int) of the
// container at path.
func (e *Editor) Delete(path []any, key any) error {
	n, err := e.Find(path...)
	if err != nil {
		return err
	}
	switch k := key.(type) {
	case string:
		if n == nil || n.Kind != Object {
			return fmt.Errorf("%s is not an object", pathString(path))
		}
		if n.count(k) > 1 {
			return fmt.Errorf("the key %s repeats", pathString(append(append([]any{}, path...), k)))
		}
		_, i := n.Get(k)
		if i < 0 {
			return nil
		}
		return e.apply(e.remove(n, i), path, func(c any) (any, error) {
			m, _ := c.(map[string]any)
			delete(m, k)
			return m, nil
		})
	case int:
		if n == nil || n.Kind != Array || k < 0 || k >= len(n.Elems) {
			return fmt.Errorf("%s has no element %d", pathString(path), k)
		}
		return e.apply(e.remove(n, k), path, func(c any) (any, error) {
			l, _ := c.([]any)
			return append(l[:k:k], l[k+1:]...), nil
		})
	}
	return fmt.Errorf("bad key %v", key)
}

// Replace sets the string value at path (an existing string) to s, in place.
func (e *Editor) Replace(path []any, s string) error {
	n, err := e.Find(path...)
	if err != nil {
		return err
	}
	if n == nil || n.Kind != String {
		return fmt.Errorf("%s is not a string", pathString(path))
	}
	if n.Str == s {
		return nil
	}
	sp := []splice{{at: n.Start, del: n.End - n.Start, ins: quote(s)}}
	parent, last := path[:len(path)-1], path[len(path)-1]
	return e.apply(sp, parent, func(c any) (any, error) {
		switch k := last.(type) {
		case string:
			c.(map[string]any)[k] = s
		case int:
			c.([]any)[k] = s
		}
		return c, nil
	})
}

// apply splices the text, updates the model at path with f, and parses the
// new text so the next edit sees fresh spans.
func (e *Editor) apply(sp []splice, path []any, f func(any) (any, error)) error {
	model, err := update(e.model, path, f)
	if err != nil {
		return err
	}
	text := splices(e.src, sp)
	root, err := parse(text)
	if err != nil {
		return fmt.Errorf("the edit broke the file (%v): a bug, please report it", err)
	}
	e.src, e.root, e.model = text, root, model
	return nil
}

// update replaces the value at path in the model by f of it.
func update(v any, path []any, f func(any) (any, error)) (any, error) {
	if len(path) == 0 {
		return f(v)
	}
	switch s := path[0].(type) {
	case string:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, errors.New("model: not an object")
		}
		nv, err := update(m[s], path[1:], f)
		m[s] = nv
		return m, err
	case int:
		l, ok := v.([]any)
		if !ok || s >= len(l) {
			return nil, errors.New("model: not an array")
		}
		nv, err := update(l[s], path[1:], f)
		l[s] = nv
		return l, err
	}
	return nil, errors.New("model: bad path")
}

// Bytes returns the edited file: its text checked, by the dialect's own
// decoder, to mean exactly the edited document.
func (e *Editor) Bytes() ([]byte, error) {
	got, err := decode(e.src, e.dialect)
	if err != nil {
		return nil, fmt.Errorf("the edit broke the file (%v): a bug, please report it", err)
	}
	if !reflect.DeepEqual(got, e.model) {
		return nil, errors.New("the edited text does not decode to the intended document: a bug, please report it")
	}
	return append(append([]byte(nil), e.bom...), e.src...), nil
}

// Empty reports whether the document is an empty object written as exactly
// "{}": what a file memvault created holds once its entries are removed.
func (e *Editor) Empty() bool { return len(e.bom) == 0 && string(e.src) == "{}" }

// Value returns the decoded value at path (nil when missing).
func (e *Editor) Value(path ...any) any {
	v := e.model
	for _, s := range path {
		switch s := s.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[s]
		case int:
			l, _ := v.([]any)
			if s < 0 || s >= len(l) {
				return nil
			}
			v = l[s]
		}
	}
	return v
}

// normalize turns an inserted value into what the decoders produce.
func normalize(v any) any {
	var out any
	json.Unmarshal([]byte((&Editor{colon: ": "}).renderCompact(v)), &out)
	return out
}

// quote writes s as a JSON string, with <, > and & left as they are.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// key writes an object key: bare in a JSON5 file written that way, when
// it is an identifier.
func (e *Editor) key(k string) string {
	if e.bare && isBareKey(k) {
		return k
	}
	return quote(k)
}

// isBareKey reports whether k may be written unquoted in JSON5 as memvault
// writes keys: an ASCII identifier ([A-Za-z_$][A-Za-z0-9_$]*).
func isBareKey(k string) bool {
	for i, r := range k {
		switch {
		case r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return k != ""
}

// The edits are spliced by hand, not made with hujson's Patch (RFC 6902),
// because hujson does not give the same bytes: it cannot parse JSON5
// (unquoted keys, single quotes, hexadecimal numbers: OpenClaw's config)
// or a file with a byte-order mark; an "add" puts the new member in with
// no white space ("opus","hooks":{…}), and Format, the cure, re-indents
// the whole file with tabs and aligns the values; a "remove" keeps or
// drops the comments and the trailing comma by its own rules, so an
// install then an uninstall does not give the file back (8 of the 14
// JSONC layouts of roundTrips it parses); and its string literals leave
// U+2028 and U+2029 raw where quote escapes them. Its "replace" of a
// string gives the same bytes for JSONC, but JSON5 needs the splice
// anyway. hujson is what decodes JSONC (decode).

// splice replaces del bytes at offset at by ins.
type splice struct {
	at, del int
	ins     string
}

func splices(src []byte, sp []splice) []byte {
	// From the end backwards, so offsets stay valid; of two at one offset,
	// the one listed first ends up first.
	sp = append([]splice(nil), sp...)
	for i, j := 0, len(sp)-1; i < j; i, j = i+1, j-1 {
		sp[i], sp[j] = sp[j], sp[i]
	}
	sort.SliceStable(sp, func(i, j int) bool { return sp[i].at > sp[j].at })
	out := append([]byte(nil), src...)
	for _, s := range sp {
		out = append(out[:s.at:s.at], append([]byte(s.ins), out[s.at+s.del:]...)...)
	}
	return out
}

// Decode reads data in dialect d into v as encoding/json would read the
// same document written as plain JSON: what a reader that edits nothing
// (doctor) needs. A blank file is an empty object.
func Decode(data []byte, d Dialect, v any) error {
	e, err := New(data, d)
	if err != nil {
		return err
	}
	model := e.model
	if model == nil {
		model = map[string]any{}
	}
	plain, err := json.Marshal(model)
	if err != nil {
		return err
	}
	return json.Unmarshal(plain, v)
}
