package transcript

import (
	"bytes"
	"reflect"
	"testing"
)

// fuzzParse checks the parser invariants on arbitrary input: no panic, the
// cursor only moves forward to a line end within the input, and importing
// in two calls gives what one call gives.
func fuzzParse(f *testing.F, format Format, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		whole, err := ParseBytes(format, data, Cursor{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := whole.Next.Offset
		if n < 0 || n > int64(len(data)) || (n > 0 && data[n-1] != '\n') || bytes.IndexByte(data[n:], '\n') >= 0 {
			t.Fatalf("bad next offset %d for %d bytes", n, len(data))
		}
		if whole.Next.Line != bytes.Count(data[:n], []byte{'\n'}) {
			t.Fatalf("next line %d, want %d", whole.Next.Line, bytes.Count(data[:n], []byte{'\n'}))
		}
		k := int(cut)
		if k > len(data) {
			k = len(data)
		}
		first, err := ParseBytes(format, data[:k], Cursor{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if first.Next.Offset > int64(k) || first.Next.Offset > n {
			t.Fatalf("prefix cursor %d beyond cut %d", first.Next.Offset, k)
		}
		rest, err := ParseBytes(format, data, first.Next, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rest.Next.Offset < first.Next.Offset || rest.Next != whole.Next {
			t.Fatalf("cursor went from %+v to %+v, want %+v", first.Next, rest.Next, whole.Next)
		}
		got := append(append([]Message{}, first.Messages...), rest.Messages...)
		if len(got) == 0 && len(whole.Messages) == 0 {
			return
		}
		if !reflect.DeepEqual(got, whole.Messages) {
			t.Fatalf("split at %d: %d messages, whole: %d", k, len(got), len(whole.Messages))
		}
	})
}

func firstLines(f *testing.F, name string, n int) string {
	data := readFixture(f, name)
	i := 0
	for ; n > 0 && i < len(data); n-- {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
	}
	return string(data[:i])
}

func FuzzClaudeCode(f *testing.F) {
	fuzzParse(f, ClaudeCode, firstLines(f, "claude-code/session.jsonl", 32),
		`{"type":"assistant","uuid":"a","message":{"content":[{"type":"tool_use","name":"X","input":"{\"a\":1}"}]}}`+"\n")
}

func FuzzCodex(f *testing.F) {
	fuzzParse(f, Codex, firstLines(f, "codex/rollout.jsonl", 30),
		`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":{"content":"x"}}}`+"\n")
}

func FuzzGemini(f *testing.F) {
	fuzzParse(f, Gemini, string(readFixture(f, "gemini/session.jsonl")),
		`{"id":"a","type":"gemini","content":"x"}`+"\n"+`{"id":"a","type":"gemini","content":"x","toolCalls":[{"id":"t","name":"n"}]}`+"\n")
}

func FuzzOpenClaw(f *testing.F) {
	fuzzParse(f, OpenClaw, string(readFixture(f, "openclaw/session.jsonl")))
}

func FuzzGeneric(f *testing.F) {
	fuzzParse(f, Generic, string(readFixture(f, "generic/session.jsonl")), `{"role":"user","ts":12,"tool":{"input":"[1"}}`+"\n")
}
