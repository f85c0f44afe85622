package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
)

// A transcript line is one JSON object per line, appended and never
// rewritten. EncodeLine writes the compact shape (docs/specs/
// STORAGE.md, "Transcript lines"); DecodeLine reads it and every
// earlier shape, and is the only way a stored line becomes a Stored:
// readers of transcripts (Read, ReadFrom and EndOf in this package, the
// import's catch-up, recall and its index, verify's tail) all go through it.
//
// The compact shape keeps the keys a person greps for and the merge driver
// sorts by (n, id, ts, role, speaker, kind, text) and differs from the first
// shape only where it saves bytes without hiding anything:
//
//   - <, > and & are written as themselves, not as \u003c, \u003e, \u0026;
//   - the source is one string, "format:line[@offset][/type]", instead of an
//     object ({"format":…,"line":…,"offset":…,"type":…}), and is left out
//     when it is empty; a format holding ':' keeps the object;
//   - a tool result whose output is the message's text (every harness that
//     stores a tool result does this) writes "output_is_text":true instead
//     of the output a second time.
//
// Every shape decodes to the same message: the format needs no version
// marker, since a string "src" and "output_is_text" exist only in the
// compact one, and an old reader that meets them ignores or rejects the
// line rather than misreading it.

// storedLine is the wire form of a line, both shapes.
type storedLine struct {
	N       int         `json:"n"`
	ID      string      `json:"id"`
	TS      time.Time   `json:"ts,omitzero"`
	Role    Role        `json:"role"`
	Speaker string      `json:"speaker,omitempty"`
	Kind    string      `json:"kind,omitempty"`
	Text    string      `json:"text"`
	Tool    *storedTool `json:"tool,omitempty"`
	// Src is a string in the compact shape, an object in the first one.
	Src json.RawMessage `json:"src,omitempty"`
}

type storedTool struct {
	Name   string          `json:"name,omitempty"`
	CallID string          `json:"call_id,omitempty"`
	Input  json.RawMessage `json:"input,omitempty"`
	Output string          `json:"output,omitempty"`
	Error  bool            `json:"error,omitempty"`
	// OutputIsText says the output is the message's text, stored once.
	OutputIsText bool `json:"output_is_text,omitempty"`
}

// errNotMessage is what DecodeLine returns for a line that is not
// a stored message (a blank line, a torn one, a line without n ≥ 1).
var errNotMessage = errors.New("transcript: not a stored message")

// EncodeLine encodes one stored message as a line, with its
// newline.
func EncodeLine(m Stored) ([]byte, error) {
	l := storedLine{N: m.N, ID: m.ID, TS: m.TS, Role: m.Role, Speaker: m.Speaker, Kind: m.Kind, Text: m.Text}
	if t := m.Tool; t != nil {
		l.Tool = &storedTool{Name: t.Name, CallID: t.CallID, Input: t.Input, Output: t.Output, Error: t.Error}
		if t.Output != "" && t.Output == m.Text {
			l.Tool.Output, l.Tool.OutputIsText = "", true
		}
	}
	if src, ok := compactSource(m.Source); ok {
		if src != "" {
			l.Src, _ = json.Marshal(src)
		}
	} else {
		obj, err := json.Marshal(m.Source)
		if err != nil {
			return nil, err
		}
		l.Src = obj
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&l); err != nil { // Encode ends the line with '\n'
		return nil, err
	}
	return b.Bytes(), nil
}

// DecodeLine decodes one line of either shape, with or without
// its newline.
func DecodeLine(line []byte) (Stored, error) {
	var l storedLine
	if err := json.Unmarshal(line, &l); err != nil {
		return Stored{}, err
	}
	if l.N <= 0 {
		return Stored{}, errNotMessage
	}
	m := Stored{N: l.N, Message: Message{ID: l.ID, TS: l.TS, Role: l.Role, Speaker: l.Speaker,
		Kind: l.Kind, Text: l.Text}}
	if t := l.Tool; t != nil {
		m.Tool = &ToolCall{Name: t.Name, CallID: t.CallID, Input: t.Input, Output: t.Output, Error: t.Error}
		if t.OutputIsText {
			m.Tool.Output = m.Text
		}
	}
	switch {
	case len(l.Src) == 0 || string(l.Src) == "null":
	case l.Src[0] == '"':
		var s string
		if err := json.Unmarshal(l.Src, &s); err != nil {
			return Stored{}, err
		}
		src, ok := parseCompactSource(s)
		if !ok {
			return Stored{}, errors.New("transcript: src " + strconv.Quote(s) + ": not format:line[@offset][/type]")
		}
		m.Source = src
	default:
		if err := json.Unmarshal(l.Src, &m.Source); err != nil {
			return Stored{}, err
		}
	}
	return m, nil
}

// compactSource writes s as "format:line[@offset][/type]", "" for the zero
// source; ok is false when the string form could not be read back (a
// format holding ':', a negative number), and the object form is kept.
func compactSource(s Source) (string, bool) {
	if s == (Source{}) {
		return "", true
	}
	if strings.ContainsRune(string(s.Format), ':') || s.Line < 0 || s.Offset < 0 {
		return "", false
	}
	b := make([]byte, 0, len(s.Format)+len(s.Type)+24)
	b = append(b, s.Format...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(s.Line), 10)
	if s.Offset != 0 {
		b = append(b, '@')
		b = strconv.AppendInt(b, s.Offset, 10)
	}
	if s.Type != "" {
		b = append(b, '/')
		b = append(b, s.Type...)
	}
	return string(b), true
}

// parseCompactSource reads what compactSource wrote.
func parseCompactSource(s string) (Source, bool) {
	format, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Source{}, false
	}
	src := Source{Format: Format(format)}
	nums, typ, hasType := strings.Cut(rest, "/")
	if hasType {
		src.Type = typ
	}
	line, off, hasOff := strings.Cut(nums, "@")
	n, err := strconv.ParseUint(line, 10, 63)
	if err != nil {
		return Source{}, false
	}
	src.Line = int(n)
	if hasOff {
		o, err := strconv.ParseUint(off, 10, 63)
		if err != nil || o == 0 {
			return Source{}, false
		}
		src.Offset = int64(o)
	}
	return src, true
}

// Stored is one line of a vault transcript: the normalised message
// and its sequence number N within the session (1-based, continuous across
// parts). Node spans and `transcript show --from/--to` use N.
type Stored struct {
	N int `json:"n"`
	Message
}
