package transcript

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/redact"
)

// Format names a transcript format that Parse understands.
type Format string

// The formats Parse understands.
const (
	ClaudeCode Format = "claude-code"
	Codex      Format = "codex"
	OpenClaw   Format = "openclaw"
	Gemini     Format = "gemini"
	Generic    Format = "generic"
)

// Formats lists every format Parse accepts, in the order the CLI documents.
func Formats() []Format {
	return []Format{ClaudeCode, Codex, OpenClaw, Gemini, Generic}
}

// ParseFormat turns a user-supplied name into a Format.
func ParseFormat(name string) (Format, error) {
	for _, f := range Formats() {
		if string(f) == name {
			return f, nil
		}
	}
	names := make([]string, 0, 5)
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return "", fmt.Errorf("transcript: unknown format %q (want one of %s)", name, strings.Join(names, ", "))
}

// Cursor is where the previous import of a source file stopped. The caller
// stores it per source file and passes it back on the next import. The zero
// Cursor means the start of the file.
type Cursor struct {
	// Offset is the byte offset just after the last complete line consumed.
	Offset int64 `json:"offset"`
	// Line is the number of lines consumed so far. If it is zero while
	// Offset is not, Parse counts the newlines before Offset itself.
	Line int `json:"line"`
	// LastLen and LastSum identify the last line consumed, the one that
	// ends at Offset: its length, newline included, and a hash of it.
	// Parse reads that line back and returns ErrRewritten when it is not
	// the same, so a file rewritten in place (same or greater length, a
	// newline where the cursor stopped) is not read on from the middle of
	// other content. Zero means unknown: no check.
	LastLen int    `json:"last_len,omitempty"`
	LastSum string `json:"last_sum,omitempty"`
}

// lineSum is the hash a Cursor keeps of the last line consumed.
func lineSum(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:16])
}

// Options tune Parse. The zero value redacts with redact.DefaultRules.
type Options struct {
	// Rules is the redaction rule set applied to every message's text and
	// tool input and output before Parse returns it. Nil means
	// redact.DefaultRules.
	Rules *redact.Rules
	// NoRedact turns redaction off. Only tests and a caller that redacts by
	// itself should set it: the vault must never see a raw secret.
	NoRedact bool
	// Session, when not nil, carries what a format knows of the lines
	// already parsed from this source from one call to the next, so that
	// a caller that reads a large file in many small calls (each from the
	// previous call's Next) does not make a format that looks back
	// (Gemini: the ids already imported) read the file again from the
	// start each time. A call that does not continue from the session's
	// last Next starts the session afresh.
	Session *Session
}

// Session is the state Options.Session carries between Parse calls over
// one source. The zero value is ready to use; a Session is not safe for
// concurrent use.
type Session struct {
	format Format
	imp    importer
	at     int64 // the Next.Offset of the last call; the importer has seen every line before it
}

// Stats says what one Parse call did with the lines it read. Nothing in a
// source line is fatal: whatever is not turned into a message is counted.
type Stats struct {
	// Lines is the number of complete lines consumed.
	Lines int `json:"lines"`
	// Messages is the number of messages returned.
	Messages int `json:"messages"`
	// Skipped counts lines (or parts of lines) of a known type that carry no
	// message, by source type: Claude Code "attachment", Codex
	// "event_msg/token_count", Gemini "update" for a rewritten record.
	Skipped map[string]int `json:"skipped,omitempty"`
	// Unknown counts lines of a type the importer does not know, by type.
	Unknown map[string]int `json:"unknown,omitempty"`
	// Invalid counts lines that are not a JSON object.
	Invalid int `json:"invalid,omitempty"`
	// Redacted counts replaced secrets by rule kind.
	Redacted map[string]int `json:"redacted,omitempty"`
}

// Result is what Parse returns.
type Result struct {
	Messages []Message
	// Next is the cursor to pass to the next Parse of the same file. It never
	// moves past a last line that has no trailing newline yet: a harness may
	// still be writing it.
	Next  Cursor
	Stats Stats
}

// ErrShrunk is returned when the cursor lies beyond the end of the source:
// the file was truncated or replaced, and the caller should decide whether
// to import it again from the start.
var ErrShrunk = errors.New("transcript: source is shorter than the cursor")

// ErrMidLine is returned when the cursor does not sit at the start of a line,
// which means the file was rewritten since the cursor was taken.
var ErrMidLine = errors.New("transcript: cursor is not at the start of a line")

// ErrRewritten is returned when the line before the cursor is not the one
// the cursor recorded (Cursor.LastSum): the file was rewritten since.
var ErrRewritten = errors.New("transcript: the line before the cursor changed")

// ParseBytes is Parse over a byte slice holding the whole source file.
func ParseBytes(format Format, data []byte, from Cursor, opts Options) (Result, error) {
	return Parse(format, bytes.NewReader(data), int64(len(data)), from, opts)
}

// Parse reads the complete lines of src between from.Offset and size and
// turns them into normalised messages. It reads nothing before from.Offset
// except the line the cursor ends (to check it is still there, ErrRewritten),
// to count lines when from.Line is unknown, and for the Gemini format,
// whose records are rewritten in place, to learn which ids were already
// imported (unless opts.Session carries them from the previous call).
// Redaction is applied here unless opts.NoRedact is set, so whatever Parse
// returns may be written to the vault as is.
//
// Parsing a file in several calls, each from the previous call's Next,
// returns exactly the messages one call over the whole file returns, with
// or without a Session.
func Parse(format Format, src io.ReaderAt, size int64, from Cursor, opts Options) (Result, error) {
	imp, err := importerFor(format)
	if err != nil {
		return Result{}, err
	}
	if from.Offset < 0 || from.Line < 0 || from.LastLen < 0 {
		return Result{}, fmt.Errorf("transcript: negative cursor %+v", from)
	}
	if from.Offset > size {
		return Result{}, ErrShrunk
	}
	if from.Offset > 0 {
		var b [1]byte
		if _, err := src.ReadAt(b[:], from.Offset-1); err != nil {
			return Result{}, fmt.Errorf("transcript: read source: %w", err)
		}
		if b[0] != '\n' {
			return Result{}, ErrMidLine
		}
		if err := checkLast(src, from); err != nil {
			return Result{}, err
		}
		if from.Line == 0 {
			n, err := countLines(io.NewSectionReader(src, 0, from.Offset))
			if err != nil {
				return Result{}, err
			}
			from.Line = n
		}
	}
	if s := opts.Session; s != nil {
		if s.imp != nil && s.format == format && s.at == from.Offset {
			imp = s.imp // it has seen every line before from.Offset
		}
		s.imp = nil // given back only by a call that read to its end
	}
	rules := opts.Rules
	if rules == nil {
		rules = redact.DefaultRules()
	}
	p := &parser{
		format: format,
		src:    src,
		start:  from.Offset,
		stats:  Stats{Skipped: map[string]int{}, Unknown: map[string]int{}, Redacted: map[string]int{}},
	}
	if !opts.NoRedact {
		p.rules = rules
	}
	next := from
	var last []byte
	r := bufio.NewReaderSize(io.NewSectionReader(src, from.Offset, size-from.Offset), 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // a torn last line (or nothing) is left for the next call
		}
		if err != nil {
			return Result{}, fmt.Errorf("transcript: read source: %w", err)
		}
		p.lineNo = next.Line + 1
		p.lineOff = next.Offset
		p.part = 0
		p.handle(imp, bytes.TrimRight(line, "\r\n"))
		next.Offset += int64(len(line))
		next.Line++
		p.stats.Lines++
		last = line
	}
	if last != nil {
		next.LastLen, next.LastSum = len(last), lineSum(last)
	}
	if s := opts.Session; s != nil {
		s.format, s.imp, s.at = format, imp, next.Offset
	}
	p.stats.Messages = len(p.msgs)
	return Result{Messages: p.msgs, Next: next, Stats: p.stats}, nil
}

// checkLast reads back the line before the cursor and compares it with the
// one the cursor recorded.
func checkLast(src io.ReaderAt, from Cursor) error {
	if from.LastLen == 0 {
		return nil
	}
	if int64(from.LastLen) > from.Offset {
		return ErrRewritten
	}
	line := make([]byte, from.LastLen)
	if _, err := src.ReadAt(line, from.Offset-int64(from.LastLen)); err != nil {
		return fmt.Errorf("transcript: read source: %w", err)
	}
	if lineSum(line) != from.LastSum {
		return ErrRewritten
	}
	return nil
}

func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("transcript: read source: %w", err)
		}
	}
}

// importer turns one source line into messages. Each format has one; they
// share the parser's helpers for ids, skipping and counting.
type importer interface {
	line(p *parser, raw []byte)
}

func importerFor(f Format) (importer, error) {
	switch f {
	case ClaudeCode:
		return claudeCode{}, nil
	case Codex:
		return codex{}, nil
	case OpenClaw:
		return openClaw{}, nil
	case Gemini:
		return &gemini{}, nil
	case Generic:
		return generic{}, nil
	}
	return nil, fmt.Errorf("transcript: unknown format %q", string(f))
}

// parser holds the state of one Parse call.
type parser struct {
	format  Format
	src     io.ReaderAt
	start   int64 // offset the call started at
	rules   *redact.Rules
	lineNo  int
	lineOff int64
	part    int // messages emitted for the current line
	msgs    []Message
	stats   Stats
}

func (p *parser) handle(imp importer, raw []byte) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return
	}
	if raw[0] != '{' || !json.Valid(raw) {
		p.stats.Invalid++
		return
	}
	imp.line(p, raw)
}

func (p *parser) skip(kind string)    { p.stats.Skipped[kind]++ }
func (p *parser) unknown(kind string) { p.stats.Unknown[kind]++ }

// emit finishes m (id suffix, source, redaction) and appends it.
func (p *parser) emit(m Message, srcType string) {
	p.part++
	if m.ID == "" {
		m.ID = "L" + strconv.Itoa(p.lineNo)
	}
	if p.part > 1 {
		m.ID += "#" + strconv.Itoa(p.part)
	}
	m.Source = Source{Format: p.format, Line: p.lineNo, Offset: p.lineOff, Type: srcType}
	if p.rules != nil {
		p.redact(&m)
	}
	p.msgs = append(p.msgs, m)
}

func (p *parser) redact(m *Message) {
	var counts map[string]int
	m.Text, counts = redact.Text(m.Text, p.rules)
	addCounts(p.stats.Redacted, counts)
	m.Speaker, counts = redact.Text(m.Speaker, p.rules)
	addCounts(p.stats.Redacted, counts)
	if m.Tool != nil {
		t := *m.Tool
		t.Output, counts = redact.Text(t.Output, p.rules)
		addCounts(p.stats.Redacted, counts)
		if len(t.Input) > 0 {
			t.Input, counts = redact.JSON(t.Input, p.rules)
			addCounts(p.stats.Redacted, counts)
		}
		m.Tool = &t
	}
}

func addCounts(dst, src map[string]int) {
	for k, v := range src {
		dst[k] += v
	}
}

// parseTime reads the timestamp shapes the harnesses write: RFC 3339 text or
// Unix milliseconds. Anything else gives the zero time.
func parseTime(v any) time.Time {
	switch t := v.(type) {
	case string:
		if ts, err := time.Parse(time.RFC3339Nano, t); err == nil {
			return ts.UTC()
		}
	case float64:
		if t > 0 {
			return time.UnixMilli(int64(t)).UTC()
		}
	case json.Number:
		if ms, err := t.Int64(); err == nil && ms > 0 {
			return time.UnixMilli(ms).UTC()
		}
	}
	return time.Time{}
}

// rawInput turns a tool's arguments into JSON for ToolCall.Input. Harnesses
// store them either as an object or as a string holding JSON (Codex, OpenAI
// chat); a string that is not JSON is kept as a JSON string.
func rawInput(v json.RawMessage) json.RawMessage {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			st := bytes.TrimSpace([]byte(s))
			if len(st) > 0 && (st[0] == '{' || st[0] == '[') && json.Valid(st) {
				return compactJSON(st)
			}
		}
	}
	return compactJSON(v)
}

func compactJSON(v []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		out, _ := json.Marshal(string(v))
		return out
	}
	return b.Bytes()
}

// inputText renders a tool call for Text, so a search for a command finds it.
func inputText(name string, in json.RawMessage) string {
	var obj map[string]any
	if json.Unmarshal(in, &obj) == nil {
		for _, k := range []string{"command", "cmd", "file_path", "path", "pattern", "query", "url", "prompt"} {
			switch v := obj[k].(type) {
			case string:
				return name + ": " + v
			case []any:
				parts := make([]string, 0, len(v))
				for _, e := range v {
					if s, ok := e.(string); ok {
						parts = append(parts, s)
					}
				}
				return name + ": " + strings.Join(parts, " ")
			}
		}
	}
	if len(in) == 0 {
		return name
	}
	return name + ": " + string(in)
}

// textOf pulls the text out of the content shapes the harnesses use: a
// string, or an array of parts with a "text" field (text, input_text,
// output_text, Gemini parts). Parts without text are left out.
func textOf(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return ""
	}
	switch v[0] {
	case '"':
		var s string
		_ = json.Unmarshal(v, &s)
		return s
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(v, &parts) != nil {
			return ""
		}
		var texts []string
		for _, pt := range parts {
			if pt.Text != "" {
				texts = append(texts, pt.Text)
			}
		}
		return strings.Join(texts, "\n")
	case '{':
		var o struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(v, &o)
		return o.Text
	}
	return ""
}
