package transcript

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// sameMessage compares two stored messages field by field; times by
// instant and offset (a decoded time has a fixed zone, not the Location it
// was made in).
func sameMessage(a, b Stored) bool {
	if !a.TS.Equal(b.TS) {
		return false
	}
	_, oa := a.TS.Zone()
	_, ob := b.TS.Zone()
	if oa != ob {
		return false
	}
	a.TS, b.TS = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

// oddText draws text that has broken JSON encoders: every escape JSON
// has, the characters Go escapes for HTML, U+2028/U+2029, the replacement
// character itself, astral planes, combining marks, lone CRs, and, once in
// a while, a huge run.
func oddText(r *rand.Rand) string { return oddTextOf(r, false) }

func oddTextOf(r *rand.Rand, huge bool) string {
	pieces := []string{"<", ">", "&", "\"", "\\", "/", "\n", "\r", "\t", "\r\n", "\u2028", "\u2029", "\uFFFD",
		"\x01", "\x1f", "\x7f", "é", "e\u0301", "😀", "𝄞", "\u200d", "\ufeff", "日本語", "{\"n\":1}", "\\u003c",
		" ", "word", "[REDACTED:token]", "ʼ", "\U0010FFFF", "\u00a0"}
	var b strings.Builder
	n := r.Intn(40)
	for i := 0; i < n; i++ {
		b.WriteString(pieces[r.Intn(len(pieces))])
	}
	if huge && r.Intn(200) == 0 {
		b.WriteString(strings.Repeat("x<&>\u2028 ", 200_000+r.Intn(50_000))) // over a MiB
	}
	if r.Intn(4) == 0 { // any valid rune, not only the listed ones
		for i := r.Intn(30); i > 0; i-- {
			c := rune(r.Intn(0x110000))
			if utf8.ValidRune(c) {
				b.WriteRune(c)
			}
		}
	}
	return b.String()
}

func randomStored(r *rand.Rand) Stored {
	roles := []Role{RoleUser, RoleAssistant, RoleTool, RoleSystem}
	formats := []Format{"claude-code", "codex", "generic", "memvault", "", "odd:format", "a@b/c"}
	m := Stored{N: 1 + r.Intn(1<<20), Message: Message{
		ID:   oddText(r),
		Role: roles[r.Intn(len(roles))],
		Text: oddTextOf(r, true),
	}}
	switch r.Intn(4) {
	case 0:
	case 1:
		m.TS = time.Date(2020+r.Intn(10), time.Month(1+r.Intn(12)), 1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60), r.Intn(1e9), time.UTC)
	default:
		m.TS = time.Unix(r.Int63n(4e9), r.Int63n(1e9)).In(time.FixedZone("x", (r.Intn(48)-24)*1800))
	}
	if r.Intn(2) == 0 {
		m.Speaker = oddText(r)
	}
	if r.Intn(3) == 0 {
		m.Kind = []string{KindCompaction, KindContext, KindBoundary, "other"}[r.Intn(4)]
	}
	if r.Intn(2) == 0 {
		m.Source = Source{Format: formats[r.Intn(len(formats))], Line: r.Intn(1 << 30), Type: oddText(r)}
		if r.Intn(2) == 0 {
			m.Source.Offset = r.Int63n(1 << 40)
		}
	}
	if r.Intn(2) == 0 {
		t := &ToolCall{Name: oddText(r), CallID: oddText(r), Error: r.Intn(2) == 0}
		switch r.Intn(4) {
		case 0:
			t.Output = m.Text // a result: the text is the output
		case 1:
			t.Output = oddText(r)
		case 2:
			in, _ := json.Marshal(map[string]string{"command": oddText(r)})
			var c bytes.Buffer
			json.Compact(&c, in)
			t.Input = c.Bytes()
		}
		m.Tool = t
	}
	return m
}

// TestTranscriptLineRoundTrip: any message with valid UTF-8 text encodes to
// one line that decodes to the same message, its text byte for byte.
func TestTranscriptLineRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(22))
	for i := 0; i < 1000; i++ {
		m := randomStored(r)
		if i == 0 { // one huge message for sure: 3 MiB of what needs escaping
			m.Text = strings.Repeat("<\u2028\"\n😀&", 3<<20/12)
		}
		line, err := EncodeLine(m)
		if err != nil {
			t.Fatalf("encode %#v: %v", m, err)
		}
		if bytes.IndexByte(line, '\n') != len(line)-1 {
			t.Fatalf("encoded message is not one line: %q", line)
		}
		got, err := DecodeLine(line)
		if err != nil {
			t.Fatalf("decode %q: %v", line, err)
		}
		if got.Text != m.Text {
			t.Fatalf("text changed:\n got %q\nwant %q", got.Text, m.Text)
		}
		if !sameMessage(got, m) {
			t.Fatalf("message changed:\n got %#v\nwant %#v\nline %s", got, m, line)
		}
		// The first shape of the same message decodes to it too.
		old, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := DecodeLine(old); err != nil || !sameMessage(got, m) {
			t.Fatalf("old shape: %v\n got %#v\nwant %#v", err, got, m)
		}
	}
}

// TestTranscriptLineIsCompact pins what the compact shape saves on a
// typical tool result, and that it stays greppable: the text appears as
// written, <, > and & included.
func TestTranscriptLineIsCompact(t *testing.T) {
	out := "if a < b && c > d {\n\treturn\n}"
	m := Stored{N: 7, Message: Message{ID: "toolu_1", TS: time.Date(2025, 1, 7, 21, 23, 0, 0, time.UTC),
		Role: RoleTool, Text: out, Tool: &ToolCall{CallID: "toolu_1", Output: out},
		Source: Source{Format: "claude-code", Line: 12, Offset: 3456, Type: "user/tool_result"}}}
	line, err := EncodeLine(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"n":7,"id":"toolu_1","ts":"2025-01-07T21:23:00Z","role":"tool","text":"if a < b && c > d {\n\treturn\n}","tool":{"call_id":"toolu_1","output_is_text":true},"src":"claude-code:12@3456/user/tool_result"}` + "\n"
	if string(line) != want {
		t.Fatalf("line:\n got %s\nwant %s", line, want)
	}
	old, _ := json.Marshal(m)
	if len(line)*10 > len(old)*7 {
		t.Fatalf("compact line is %d bytes, the first shape %d", len(line), len(old))
	}
}

// TestTranscriptLineRefuses: what is not a stored message is not decoded
// as one.
func TestTranscriptLineRefuses(t *testing.T) {
	for _, line := range []string{``, `{}`, `{"n":0,"text":"x"}`, `{"n":-3,"text":"x"}`, `{"n":1,"text":"x"`, `[1]`,
		`{"n":1,"role":"user","text":"x","src":"no colon"}`, `{"n":1,"role":"user","text":"x","src":"f:1@0"}`,
		`{"n":1,"role":"user","text":"x","src":"f:x"}`, `{"n":1,"role":"user","text":"x","src":"f:-1"}`} {
		if m, err := DecodeLine([]byte(line)); err == nil {
			t.Errorf("%s decoded as %#v", line, m)
		}
	}
}

// TestOneTranscriptDecoder: no code of the package decodes a transcript
// line by itself (a `var m Stored` filled by json.Unmarshal, or an
// ad hoc struct with the line's "n"), so every reader takes both shapes.
// The merge driver (mergefile.go) reads n, id and ts, which both shapes
// share, to sort lines it never decodes.
func TestOneTranscriptDecoder(t *testing.T) {
	root := filepath.Join("..", "..")
	bad := regexp.MustCompile(`var \w+ (transcript\.)?Stored\b|&(transcript\.)?Stored\{|Unmarshal\([^)]*&\w*[sS]tored`)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || p == "line.go" || filepath.Base(p) == "line.go" && filepath.Base(filepath.Dir(p)) == "transcript" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if bad.MatchString(line) {
				t.Errorf("%s:%d decodes a transcript line itself; use transcript.DecodeLine: %s", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
