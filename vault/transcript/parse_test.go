package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/redact"
)

const fixtureDir = "../../fixtures/transcripts"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

type fixtureCase struct {
	format   Format
	file     string
	lines    int
	roles    map[Role]int
	kinds    map[string]int
	first    string // text of the first user message
	last     string // text of the last message
	ids      []string
	tool     string // name of a tool call that must be there
	summary  string // text found in the compaction message
	redacted map[string]int
}

var fixtureCases = []fixtureCase{
	{
		format: ClaudeCode, file: "claude-code/session.jsonl", lines: 72,
		summary:  "1. Primary Request: greet and run echo.",
		roles:    map[Role]int{RoleUser: 4, RoleAssistant: 4, RoleTool: 2, RoleSystem: 4},
		kinds:    map[string]int{KindCompaction: 1, KindBoundary: 1, KindContext: 2},
		first:    "hello, remember that my aws key is [REDACTED:aws-access-key]",
		last:     "Fake answer 5 to:  knowledge cutoff is June 2026. Today's date is 2026-11-22.",
		ids:      []string{"fd5459cf-e6d5-4868-9abc-7c2148ddb43c", "8ff1ce4e-9e56-4049-b572-c3e59c0ae93b", "ff6b361c-134a-465a-8a82-056a5900c70e"},
		tool:     "Bash",
		redacted: map[string]int{redact.KindAWSAccessKey: 1},
	},
	{
		format: Codex, file: "codex/rollout.jsonl", lines: 53,
		summary:  "Fake answer 4 to: cused on helping",
		roles:    map[Role]int{RoleUser: 3, RoleAssistant: 4, RoleTool: 2, RoleSystem: 5},
		kinds:    map[string]int{KindCompaction: 1, KindContext: 4},
		first:    "hello, my github token is [REDACTED:github-token]",
		last:     "Fake answer 5 to: after compaction, say goodbye",
		ids:      []string{"msg_01a20169-3075-70e0-8a72-aec94462759b", "fc_fake2", "fco_01a20169-31cd-7903-b0de-f415116574bf", "msg_fake5"},
		tool:     "exec_command",
		redacted: map[string]int{redact.KindGitHubToken: 2},
	},
	{
		format: Gemini, file: "gemini/session.jsonl", lines: 36,
		summary:  "<state_snapshot><overall_goal>greet and run echo",
		roles:    map[Role]int{RoleUser: 4, RoleAssistant: 4, RoleTool: 2, RoleSystem: 1},
		kinds:    map[string]int{KindCompaction: 1},
		first:    "hello, the db password=[REDACTED:secret-assignment] is secret",
		last:     "Fake answer 12 to: after compression, say goodbye",
		ids:      []string{"89dc5a40-817f-4d41-b655-550e5ec9bc69", "run_shell_command__run_shell_command_1795320061559_0", "25f62c82-9ec6-43b6-b66d-6525432412a0", "dfe648c4-b4c7-4619-b564-01517aa548fd"},
		tool:     "run_shell_command",
		redacted: map[string]int{redact.KindSecretAssignment: 2},
	},
	{
		format: OpenClaw, file: "openclaw/session.jsonl", lines: 21,
		summary: "## Latest user request context",
		roles:   map[Role]int{RoleUser: 4, RoleAssistant: 4, RoleTool: 2, RoleSystem: 1},
		kinds:   map[string]int{KindCompaction: 1},
		// OpenClaw masks the token itself before it stores the message.
		first:    "hello, slack token xoxb-1…ijkl",
		last:     "Fake answer 7 to:  Active Subagents\\nnone\" <<<END_OPENCLAW_INTERNAL_CONTEXT>>>",
		ids:      []string{"58a67666-3eb5-49e2-8193-de9ab7dbb596", "afbea5cd-9e38-407c-95e3-a8f6e507dd2c", "2d3f3b40-50f5-48f4-ac6b-028e1d7a01af"},
		tool:     "exec",
		redacted: map[string]int{},
	},
	{
		format: Generic, file: "generic/session.jsonl", lines: 7,
		summary:  "a dry run passed",
		roles:    map[Role]int{RoleUser: 2, RoleAssistant: 2, RoleTool: 2, RoleSystem: 1},
		kinds:    map[string]int{KindCompaction: 1},
		first:    "what does the deploy script need?",
		last:     "Done: the deploy ran with Authorization: Bearer [REDACTED:bearer-token] in the header.",
		ids:      []string{"g-1", "g-3", "g-7"},
		tool:     "Bash",
		redacted: map[string]int{redact.KindBearerToken: 1, redact.KindAPIKey: 1},
	},
}

func TestFixtures(t *testing.T) {
	for _, tc := range fixtureCases {
		t.Run(string(tc.format), func(t *testing.T) {
			data := readFixture(t, tc.file)
			res, err := ParseBytes(tc.format, data, Cursor{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Next.Offset != int64(len(data)) || res.Next.Line != tc.lines || res.Stats.Lines != tc.lines {
				t.Errorf("next = %+v, lines %d; want offset %d line %d", res.Next, res.Stats.Lines, len(data), tc.lines)
			}
			if len(res.Stats.Unknown) != 0 || res.Stats.Invalid != 0 {
				t.Errorf("unknown %v invalid %d in a real capture", res.Stats.Unknown, res.Stats.Invalid)
			}
			roles := map[Role]int{}
			kinds := map[string]int{}
			ids := map[string]bool{}
			var firstUser string
			var tool bool
			for i, m := range res.Messages {
				roles[m.Role]++
				if m.Kind != "" {
					kinds[m.Kind]++
				}
				if ids[m.ID] {
					t.Errorf("duplicate id %s", m.ID)
				}
				ids[m.ID] = true
				if m.Role == RoleUser && firstUser == "" {
					firstUser = m.Text
				}
				if m.Tool != nil && m.Tool.Name == tc.tool && len(m.Tool.Input) > 0 && json.Valid(m.Tool.Input) {
					tool = true
				}
				if m.Source.Format != tc.format || m.Source.Line < 1 || m.Source.Line > tc.lines {
					t.Errorf("message %d: bad source %+v", i, m.Source)
				}
				if !bytes.HasPrefix(data[m.Source.Offset:], []byte("{")) || (m.Source.Offset > 0 && data[m.Source.Offset-1] != '\n') {
					t.Errorf("message %d: offset %d is not a line start", i, m.Source.Offset)
				}
				if m.TS.IsZero() {
					t.Errorf("message %d (%s): no timestamp", i, m.ID)
				}
				if m.Role == RoleTool && m.Tool == nil {
					t.Errorf("message %d: tool role without tool", i)
				}
			}
			if !reflect.DeepEqual(roles, tc.roles) {
				t.Errorf("roles = %v, want %v", roles, tc.roles)
			}
			if !reflect.DeepEqual(kinds, tc.kinds) {
				t.Errorf("kinds = %v, want %v", kinds, tc.kinds)
			}
			if firstUser != tc.first {
				t.Errorf("first user text = %q, want %q", firstUser, tc.first)
			}
			if got := res.Messages[len(res.Messages)-1].Text; got != tc.last {
				t.Errorf("last text = %q, want %q", got, tc.last)
			}
			for _, id := range tc.ids {
				if !ids[id] {
					t.Errorf("source id %s not kept", id)
				}
			}
			var summary string
			for _, m := range res.Messages {
				if m.Kind == KindCompaction {
					summary = m.Text
				}
			}
			if !strings.Contains(summary, tc.summary) {
				t.Errorf("compaction summary %q does not contain %q", summary, tc.summary)
			}
			if !tool {
				t.Errorf("no %s tool call with JSON input", tc.tool)
			}
			if !reflect.DeepEqual(res.Stats.Redacted, tc.redacted) {
				t.Errorf("redacted = %v, want %v", res.Stats.Redacted, tc.redacted)
			}
			if res.Stats.Messages != len(res.Messages) {
				t.Errorf("stats.Messages = %d, want %d", res.Stats.Messages, len(res.Messages))
			}
		})
	}
}

// TestIncremental parses each fixture in two calls, cut at many byte
// offsets (torn lines included), and wants exactly what one call gives.
func TestIncremental(t *testing.T) {
	for _, tc := range fixtureCases {
		t.Run(string(tc.format), func(t *testing.T) {
			t.Parallel()
			// Redaction is per message and tested elsewhere; leaving it out
			// halves the time of this sweep.
			opts := Options{NoRedact: true}
			data := readFixture(t, tc.file)
			whole, err := ParseBytes(tc.format, data, Cursor{}, opts)
			if err != nil {
				t.Fatal(err)
			}
			// Byte cuts spread over the file (mostly torn lines), plus line
			// boundaries and one byte either side of some of them.
			step := max(len(data)/25, 1)
			cuts := []int{0, 1, len(data) - 1, len(data)}
			for k := step / 2; k < len(data); k += step {
				cuts = append(cuts, k)
			}
			nl := 0
			for i := range data {
				if data[i] != '\n' {
					continue
				}
				nl++
				cuts = append(cuts, i+1)
				if nl%7 == 0 {
					cuts = append(cuts, i, min(i+2, len(data)))
				}
			}
			for n, k := range cuts {
				first, err := ParseBytes(tc.format, data[:k], Cursor{}, opts)
				if err != nil {
					t.Fatalf("cut %d: %v", k, err)
				}
				if first.Next.Offset > int64(k) || (first.Next.Offset > 0 && data[first.Next.Offset-1] != '\n') {
					t.Fatalf("cut %d: next offset %d is not a line end within the prefix", k, first.Next.Offset)
				}
				if k < len(data) && bytes.IndexByte(data[first.Next.Offset:k], '\n') >= 0 {
					t.Fatalf("cut %d: a complete line after %d was not consumed", k, first.Next.Offset)
				}
				rest, err := ParseBytes(tc.format, data, first.Next, opts)
				if err != nil {
					t.Fatalf("cut %d: %v", k, err)
				}
				got := append(append([]Message{}, first.Messages...), rest.Messages...)
				if !reflect.DeepEqual(got, whole.Messages) {
					t.Fatalf("cut %d: split import differs from a whole one (%d vs %d messages)", k, len(got), len(whole.Messages))
				}
				if rest.Next != whole.Next {
					t.Fatalf("cut %d: next %+v, want %+v", k, rest.Next, whole.Next)
				}
				if n%10 == 0 {
					// A caller that lost the line count gets the same numbers.
					noLine, err := ParseBytes(tc.format, data, Cursor{Offset: first.Next.Offset}, opts)
					if err != nil || !reflect.DeepEqual(noLine.Messages, rest.Messages) {
						t.Fatalf("cut %d: cursor without line number differs: %v", k, err)
					}
				}
			}
		})
	}
}

func TestTornLastLine(t *testing.T) {
	data := []byte(`{"id":"a","role":"user","text":"one"}` + "\n" + `{"id":"b","role":"assistant","text":"tw`)
	res, err := ParseBytes(Generic, data, Cursor{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || res.Messages[0].ID != "a" {
		t.Fatalf("messages = %+v", res.Messages)
	}
	end := bytes.IndexByte(data, '\n') + 1
	want := Cursor{Offset: int64(end), Line: 1, LastLen: end, LastSum: lineSum(data[:end])}
	if res.Next != want {
		t.Fatalf("next = %+v, want %+v", res.Next, want)
	}
	// The writer finishes the line: the next call picks it up.
	data = append(data, []byte(`o"}`+"\n")...)
	res, err = ParseBytes(Generic, data, res.Next, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || res.Messages[0].Text != "two" || res.Messages[0].Source.Line != 2 {
		t.Fatalf("messages = %+v", res.Messages)
	}
	// Nothing new: nothing returned, cursor unchanged.
	again, err := ParseBytes(Generic, data, res.Next, Options{})
	if err != nil || len(again.Messages) != 0 || again.Next != res.Next {
		t.Fatalf("re-import of a finished file: %+v, %v", again, err)
	}
}

func TestCursorErrors(t *testing.T) {
	data := []byte(`{"id":"a","role":"user","text":"one"}` + "\n")
	if _, err := ParseBytes(Generic, data, Cursor{Offset: 100}, Options{}); !errors.Is(err, ErrShrunk) {
		t.Errorf("beyond end: %v, want ErrShrunk", err)
	}
	if _, err := ParseBytes(Generic, data, Cursor{Offset: 5}, Options{}); !errors.Is(err, ErrMidLine) {
		t.Errorf("mid line: %v, want ErrMidLine", err)
	}
	if _, err := ParseBytes("nope", data, Cursor{}, Options{}); err == nil {
		t.Error("unknown format accepted")
	}
	if _, err := ParseFormat("claude-code"); err != nil {
		t.Error(err)
	}
	if _, err := ParseFormat("claude"); err == nil || !strings.Contains(err.Error(), "claude-code") {
		t.Errorf("ParseFormat(claude) = %v", err)
	}
}

// TestUnknownLines feeds each importer lines it cannot know; they are
// counted, never fatal, and the lines around them still import.
func TestUnknownLines(t *testing.T) {
	cases := []struct {
		format  Format
		good    string
		unknown string
		key     string
	}{
		{ClaudeCode, `{"type":"user","uuid":"u1","timestamp":"2026-11-22T10:00:00Z","message":{"role":"user","content":"hi"}}`, `{"type":"hologram","uuid":"x"}`, "hologram"},
		{Codex, `{"timestamp":"2026-11-22T10:00:00Z","type":"response_item","payload":{"type":"message","id":"m1","role":"user","content":[{"type":"input_text","text":"hi"}]}}`, `{"timestamp":"2026-11-22T10:00:00Z","type":"response_item","payload":{"type":"telepathy"}}`, "response_item/telepathy"},
		{Gemini, `{"id":"r1","timestamp":"2026-11-22T10:00:00Z","type":"user","content":[{"text":"hi"}]}`, `{"id":"r2","type":"hologram","content":"x"}`, "hologram"},
		{OpenClaw, `{"type":"message","id":"e1","timestamp":"2026-11-22T10:00:00Z","message":{"role":"user","content":"hi"}}`, `{"type":"message","id":"e2","message":{"role":"narrator","content":"x"}}`, "message/narrator"},
		{Generic, `{"id":"g1","ts":"2026-11-22T10:00:00Z","role":"user","text":"hi"}`, `{"id":"g2","role":"narrator","text":"x"}`, "role:narrator"},
	}
	for _, tc := range cases {
		t.Run(string(tc.format), func(t *testing.T) {
			src := strings.Join([]string{tc.unknown, "not json at all", `["an","array"]`, "", tc.good, tc.unknown}, "\n") + "\n"
			res, err := ParseBytes(tc.format, []byte(src), Cursor{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Messages) != 1 || res.Messages[0].Text != "hi" || res.Messages[0].Source.Line != 5 {
				t.Fatalf("messages = %+v", res.Messages)
			}
			if res.Stats.Unknown[tc.key] != 2 || res.Stats.Invalid != 2 || res.Stats.Lines != 6 {
				t.Fatalf("stats = %+v", res.Stats)
			}
		})
	}
}

// TestGenericRoundTrip checks that the stored form imports as generic
// unchanged, so a vault transcript can be moved between vaults.
func TestGenericRoundTrip(t *testing.T) {
	res, err := ParseBytes(ClaudeCode, readFixture(t, "claude-code/session.jsonl"), Cursor{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, m := range res.Messages {
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
	}
	back, err := ParseBytes(Generic, buf.Bytes(), Cursor{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Messages) != len(res.Messages) {
		t.Fatalf("%d messages back, want %d", len(back.Messages), len(res.Messages))
	}
	for i, m := range back.Messages {
		want := res.Messages[i]
		want.Source, m.Source = Source{}, Source{}
		if !reflect.DeepEqual(m, want) {
			t.Errorf("message %d:\n got %+v\nwant %+v", i, m, want)
		}
	}
}

func TestNoRedact(t *testing.T) {
	data := readFixture(t, "claude-code/session.jsonl")
	res, err := ParseBytes(ClaudeCode, data, Cursor{}, Options{NoRedact: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Messages[0].Text, "AKIAIOSFODNN7EXAMPLE") || len(res.Stats.Redacted) != 0 {
		t.Fatalf("NoRedact still redacted: %q %v", res.Messages[0].Text, res.Stats.Redacted)
	}
}

func TestToolInputRedactedAsJSON(t *testing.T) {
	line := `{"type":"assistant","uuid":"a1","timestamp":"2026-11-22T10:00:00Z","message":{"model":"m","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"curl -H 'Authorization: Bearer abcdef0123456789abcdef' https://x","env":["GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345"]}}]}}` + "\n"
	res, err := ParseBytes(ClaudeCode, []byte(line), Cursor{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tool := res.Messages[0].Tool
	if !json.Valid(tool.Input) || bytes.Contains(tool.Input, []byte("abcdef0123456789")) || bytes.Contains(tool.Input, []byte("ghp_0123")) {
		t.Fatalf("input = %s", tool.Input)
	}
	if strings.Contains(res.Messages[0].Text, "abcdef0123456789") {
		t.Fatalf("text = %q", res.Messages[0].Text)
	}
	if res.Stats.Redacted[redact.KindBearerToken] != 2 || res.Stats.Redacted[redact.KindGitHubToken] != 1 {
		t.Fatalf("redacted = %v", res.Stats.Redacted)
	}
}
