package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func fixture(t *testing.T, harness, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "fixtures", "hooks", harness, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustHarness(t testing.TB, name string) *Harness {
	t.Helper()
	h, ok := Lookup(name)
	if !ok {
		t.Fatalf("no harness %q", name)
	}
	return h
}

// The harness table is read-only: what a caller gets is its own copy, and
// the order doctor and the help text print is the one they always printed.
func TestHarnessLookup(t *testing.T) {
	want := []string{"claude-code", "codex", "opencode", "openclaw", "gemini"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		if got, ok := Lookup(name); !ok || got.Name != name {
			t.Errorf("Lookup(%q) = %+v, %v", name, got, ok)
		}
	}
	if h, ok := Lookup("no-such-harness"); ok || h != nil {
		t.Errorf("Lookup of an unknown name = %v, %v", h, ok)
	}

	h := mustHarness(t, "claude-code")
	h.ContextLimit = 1
	h.Native["Stop"] = SessionEnd
	h.Native["Invented"] = Stop
	h.JSONOnly = true
	again := mustHarness(t, "claude-code")
	if again.ContextLimit != 9500 || again.JSONOnly || again.Native["Stop"] != Stop || len(again.Native) != 6 {
		t.Errorf("a caller's change reached the table: %+v", again)
	}
}

// Every captured payload maps onto the runtime event its harness means.
func TestParseRealPayloads(t *testing.T) {
	cases := []struct {
		harness, file string
		want          Event
	}{
		{"claude-code", "SessionStart-startup.json", SessionStart},
		{"claude-code", "SessionStart-compact.json", SessionStart},
		{"claude-code", "UserPromptSubmit.json", PromptSubmit},
		{"claude-code", "Stop.json", Stop},
		{"claude-code", "PreCompact-manual.json", PreCompaction},
		{"claude-code", "PostCompact-auto.json", CompactionComplete},
		{"claude-code", "SessionEnd-other.json", SessionEnd},
		{"codex", "SessionStart-compact.json", SessionStart},
		{"codex", "UserPromptSubmit.json", PromptSubmit},
		{"codex", "PostCompact-auto.json", CompactionComplete},
		{"gemini", "BeforeAgent.json", PromptSubmit},
		{"gemini", "AfterAgent.json", Stop},
		{"gemini", "PreCompress-auto.json", PreCompaction},
		{"gemini", "SessionEnd-exit.json", SessionEnd},
	}
	for _, c := range cases {
		ev, p, err := Parse(mustHarness(t, c.harness), "", fixture(t, c.harness, c.file))
		if err != nil || ev != c.want || p.SessionID == "" || p.CWD == "" {
			t.Errorf("%s/%s: event %q, session %q, err %v; want %q", c.harness, c.file, ev, p.SessionID, err, c.want)
		}
	}
	_, p, _ := Parse(mustHarness(t, "claude-code"), "", fixture(t, "claude-code", "PostCompact-auto.json"))
	if !strings.Contains(p.CompactSummary, "<summary>") || summaryBlock(p.CompactSummary) == p.CompactSummary {
		t.Errorf("compact summary: %q", p.CompactSummary)
	}
	_, p, _ = Parse(mustHarness(t, "gemini"), "", fixture(t, "gemini", "BeforeAgent.json"))
	if p.Prompt != "hello, first turn" {
		t.Errorf("gemini prompt keeps the hook context: %q", p.Prompt)
	}
	_, p, _ = Parse(mustHarness(t, "gemini"), "", fixture(t, "gemini", "AfterAgent.json"))
	if p.LastAssistant == "" {
		t.Error("gemini AfterAgent: prompt_response not taken as the last assistant message")
	}
	if _, _, err := Parse(mustHarness(t, "codex"), "BeforeAgent", fixture(t, "codex", "Stop.json")); err == nil {
		t.Error("a gemini event name was accepted for codex")
	}
}

func TestRenderShapes(t *testing.T) {
	var out struct {
		H struct {
			Name    string `json:"hookEventName"`
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(Render(mustHarness(t, "claude-code"), PromptSubmit, "ctx <b>"), &out); err != nil ||
		out.H.Name != "UserPromptSubmit" || out.H.Context != "ctx <b>" {
		t.Fatalf("claude-code: %+v %v", out, err)
	}
	if err := json.Unmarshal(Render(mustHarness(t, "gemini"), PromptSubmit, "ctx"), &out); err != nil || out.H.Name != "BeforeAgent" {
		t.Fatalf("gemini: %+v %v", out, err)
	}
	if got := string(Render(mustHarness(t, "gemini"), Stop, "")); got != "{}\n" {
		t.Fatalf("gemini stop: %q", got)
	}
	if got := string(Render(mustHarness(t, "codex"), SessionStart, "plain")); got != "plain\n" {
		t.Fatalf("codex: %q", got)
	}
	if got := Render(mustHarness(t, "codex"), Stop, "ignored"); got != nil {
		t.Fatalf("codex stop must print nothing: %q", got)
	}
}

// fit keeps priority order, never cuts a line, and stays within the limit.
func TestFit(t *testing.T) {
	a := "note"
	b := strings.Repeat("line of memory\n", 100)
	got := fit([]string{a, b, "never reached"}, 300)
	if len(got) > 300 || !strings.HasPrefix(got, "note\n\nline of memory\n") || strings.Contains(got, "never") {
		t.Fatalf("fit: %d bytes: %q", len(got), got)
	}
	for _, line := range strings.Split(got, "\n") {
		if line != "" && line != "note" && line != "line of memory" && !(strings.HasPrefix(line, "[memvault: ") && strings.Contains(line, " rows left out ")) {
			t.Fatalf("a line was cut: %q", line)
		}
	}
	if got := fit([]string{"a", "b"}, 100); got != "a\n\nb" {
		t.Fatalf("fit small: %q", got)
	}
}

func TestStripBlock(t *testing.T) {
	s := "#!/bin/sh\n" + blockStart + "\nours\n" + blockEnd + "\necho mine\n"
	if got := stripBlock(s); got != "#!/bin/sh\necho mine\n" {
		t.Fatalf("%q", got)
	}
}

// FuzzParse: no payload makes the parser panic, and every accepted payload
// resolves to one of the six runtime events.
func FuzzParse(f *testing.F) {
	for _, h := range []string{"claude-code", "codex", "gemini"} {
		entries, _ := os.ReadDir(filepath.Join("..", "fixtures", "hooks", h))
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".json") {
				data, _ := os.ReadFile(filepath.Join("..", "fixtures", "hooks", h, e.Name()))
				f.Add(h, "", data)
			}
		}
	}
	f.Add("codex", "stop", []byte(`{"session_id":1}`))
	f.Fuzz(func(t *testing.T, harness, event string, data []byte) {
		h, ok := Lookup(harness)
		if !ok {
			h = mustHarness(t, "claude-code")
		}
		ev, _, err := Parse(h, event, data)
		if err != nil {
			return
		}
		for _, e := range Events {
			if e == ev {
				return
			}
		}
		t.Fatalf("unknown event %q", ev)
	})
}

// Apply leaves a harness's configuration with the mode its owner gave it.
func TestApplyKeepsMode(t *testing.T) {
	dir := t.TempDir()
	for _, mode := range []os.FileMode{0o600, 0o644} {
		p := filepath.Join(dir, "settings.json")
		if err := os.WriteFile(p, []byte("{}\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		content := []byte("{\n  \"hooks\": {}\n}\n")
		if err := Apply([]Change{{Path: p, Action: "write", Content: content}}); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != mode {
			t.Errorf("a %o file became %o", mode, info.Mode().Perm())
		}
		if data, _ := os.ReadFile(p); string(data) != string(content) {
			t.Errorf("content %q", data)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a temporary file was left: %v", entries)
	}
}
