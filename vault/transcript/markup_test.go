package transcript

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestStripMarkup(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, a < b", "plain text, a < b"},
		{"<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n            <command-args></command-args>", "/compact"},
		{"<command-name>/review</command-name> <command-message>review</command-message> <command-args>the parser</command-args>", "/review the parser"},
		{"fix it <system-reminder>tools\nare here</system-reminder> now", "fix it now"},
		{"<local-command-stdout>Compacted</local-command-stdout>", ""},
		{"<local-command-caveat>Caveat</local-command-caveat>\nhello", "hello"},
		{"hi <user-prompt-submit-hook>ctx</user-prompt-submit-hook>", "hi"},
		{"<environment_context>\n <cwd>/p</cwd>\n</environment_context>\n\n\nreal ask", "real ask"},
		{"<user_instructions>be terse</user_instructions>ask", "ask"},
		{"<permissions instructions>sandbox</permissions instructions>ask", "ask"},
		{"<hook_context>memvault</hook_context>\nask <session_context>x</session_context>", "ask"},
		{"<untrusted_context>\nOutput: ok\n</untrusted_context>", "Output: ok"},
		{"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>secret rules<<<END_OPENCLAW_INTERNAL_CONTEXT>>>ask", "ask"},
		{"answer <<<END_OPENCLAW_INTERNAL_CONTEXT>>>", "answer"},
		{"cut <system-reminder>never closed", "cut"},
		{"stray </system-reminder> close", "stray close"},
		{"<div>html stays</div>", "<div>html stays</div>"},
	} {
		if got := StripMarkup(c.in); got != c.want {
			t.Errorf("StripMarkup(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestMarkupNeverReachesTheReader parses each harness's recorded
// transcripts (the captures of fixtures/transcripts and the work fixtures)
// and checks that no tag of the table survives StripMarkup in any
// message's text.
func TestMarkupNeverReachesTheReader(t *testing.T) {
	files := map[string]Format{
		"../../fixtures/transcripts/claude-code/session.jsonl": ClaudeCode,
		"../../fixtures/transcripts/codex/rollout.jsonl":       Codex,
		"../../fixtures/transcripts/gemini/session.jsonl":      Gemini,
		"../../fixtures/transcripts/openclaw/session.jsonl":    OpenClaw,
		"testdata/work/claude-code.jsonl":                      ClaudeCode,
		"testdata/work/codex.jsonl":                            Codex,
		"testdata/work/gemini.jsonl":                           Gemini,
		"testdata/work/openclaw.jsonl":                         OpenClaw,
		"testdata/work/generic.jsonl":                          Generic,
	}
	for path, f := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ParseBytes(f, data, Cursor{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, m := range res.Messages {
			out := StripMarkup(m.Text)
			for _, tag := range MarkupTags() {
				if strings.Contains(m.Text, tag) {
					found++
				}
				if strings.Contains(out, tag) {
					t.Errorf("%s: message %s keeps %s: %q", path, m.ID, tag, out)
				}
			}
		}
		if found == 0 {
			t.Errorf("%s: holds no markup of the table: the test tries nothing", path)
		}
	}
}

func TestCutWords(t *testing.T) {
	if got := CutWords("fix the failing parser test in parse.go", 20); got != "fix the failing…" {
		t.Errorf("got %q", got)
	}
	if got := CutWords("short", 20); got != "short" {
		t.Errorf("got %q", got)
	}
	if got := CutWords(strings.Repeat("x", 30), 10); got != strings.Repeat("x", 9)+"…" {
		t.Errorf("got %q", got)
	}
}

// TestWorkPerHarness reads, for each harness, a transcript in its own
// format with edits and a failing command, and checks the files touched
// and the commands run, the failed one marked.
func TestWorkPerHarness(t *testing.T) {
	wantFiles := []string{"/p/parse.go", "/p/parse_test.go"}
	for _, f := range []Format{ClaudeCode, Codex, Gemini, OpenClaw} {
		data, err := os.ReadFile("testdata/work/" + string(f) + ".jsonl")
		if err != nil {
			t.Fatal(err)
		}
		res, err := ParseBytes(f, data, Cursor{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var w Work
		for _, m := range res.Messages {
			w.Add(m)
		}
		if !slices.Equal(w.Files, wantFiles) {
			t.Errorf("%s: files %q, want %q", f, w.Files, wantFiles)
		}
		if len(w.Commands) != 2 {
			t.Fatalf("%s: commands %+v, want two", f, w.Commands)
		}
		if c := w.Commands[0]; c.Text != "go test ./..." || !c.Failed || c.Exit != 1 {
			t.Errorf("%s: first command %+v, want go test ./... failed with exit 1", f, c)
		}
		if c := w.Commands[1]; c.Text != "go test ./parse" || c.Failed {
			t.Errorf("%s: second command %+v, want go test ./parse, not failed", f, c)
		}
	}
}

// TestWorkOfTheCaptures reads the shell calls the real harnesses recorded.
func TestWorkOfTheCaptures(t *testing.T) {
	for path, f := range map[string]Format{
		"../../fixtures/transcripts/claude-code/session.jsonl": ClaudeCode,
		"../../fixtures/transcripts/codex/rollout.jsonl":       Codex,
		"../../fixtures/transcripts/gemini/session.jsonl":      Gemini,
		"../../fixtures/transcripts/openclaw/session.jsonl":    OpenClaw,
	} {
		data, _ := os.ReadFile(path)
		res, err := ParseBytes(f, data, Cursor{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var w Work
		for _, m := range res.Messages {
			w.Add(m)
		}
		if len(w.Commands) == 0 || w.Commands[0].Text != "echo memvault-tool-ok" || w.Commands[0].Failed {
			t.Errorf("%s: commands %+v", path, w.Commands)
		}
	}
}
