// Package hooks connects agent harnesses to the vault. Each harness calls
// `memvault hook <harness> <event>` from its lifecycle hooks with a JSON
// payload on stdin; this package maps the payload onto one runtime model of
// six events, runs the event against the vault, and renders what that
// harness accepts on stdout. Everything here fails open: a hook must never
// break or delay the user's turn.
package hooks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/memvault/memvault/vault"
)

// Event is one of the six runtime events every harness is mapped onto.
type Event string

// The runtime events (DESIGN §8, docs/HOOKS.md).
const (
	SessionStart       Event = "session-start"
	PromptSubmit       Event = "prompt-submit"
	Stop               Event = "stop"
	PreCompaction      Event = "pre-compaction"
	CompactionComplete Event = "compaction-complete"
	SessionEnd         Event = "session-end"
)

// Events lists the runtime events in lifecycle order.
var Events = []Event{SessionStart, PromptSubmit, Stop, PreCompaction, CompactionComplete, SessionEnd}

// Harness describes what one harness sends and accepts.
type Harness struct {
	Name string
	// Native maps the harness's own event names to runtime events.
	Native map[string]Event
	// Format is the transcript format of its transcript_path, "" if none.
	Format string
	// ContextLimit is the budget of the context injected at session start
	// and prompt submit, in characters (counted as bytes, which is never
	// fewer): below what the harness takes before it truncates or replaces
	// the text, or DefaultContextLimit where it states no limit
	// (docs/HOOKS.md, "Context budgets").
	ContextLimit int
	// JSONOnly harnesses reject anything on stdout that is not JSON.
	JSONOnly bool
}

// harnessTable builds the supported harnesses, in the order doctor and the
// help text list them. It is built afresh per call and never stored, so a
// caller that changes its copy (a Native map included) changes nothing for
// anyone else.
func harnessTable() []Harness {
	return []Harness{
		{
			// Claude Code replaces hook output over 10,000 characters by a
			// 2 KB preview (fixtures/hooks/README.md).
			Name: "claude-code", Format: "claude-code", ContextLimit: 9500,
			Native: map[string]Event{"SessionStart": SessionStart, "UserPromptSubmit": PromptSubmit, "Stop": Stop,
				"PreCompact": PreCompaction, "PostCompact": CompactionComplete, "SessionEnd": SessionEnd},
		},
		{
			// Codex keeps 2,500 tokens of a hook's output, counted at about
			// four characters a token (20,000 characters were 5,011 tokens),
			// and cuts the middle of the rest: ~10,000 characters.
			Name: "codex", Format: "codex", ContextLimit: 9000,
			Native: map[string]Event{"SessionStart": SessionStart, "UserPromptSubmit": PromptSubmit, "Stop": Stop,
				"PreCompact": PreCompaction, "PostCompact": CompactionComplete, "SessionEnd": SessionEnd},
		},
		{
			// No limit of its own, and the plugin sends the context as a
			// system message on every model call: memvault's own budget.
			Name: "opencode", ContextLimit: DefaultContextLimit,
			Native: map[string]Event{"session.created": SessionStart, "chat.message": PromptSubmit, "session.idle": Stop,
				"experimental.session.compacting": PreCompaction, "session.compacted": CompactionComplete},
		},
		{
			// appendSystemContext and prependContext have no limit of their own.
			Name: "openclaw", ContextLimit: DefaultContextLimit,
			Native: map[string]Event{"session_start": SessionStart, "before_prompt_build": PromptSubmit, "agent_end": Stop,
				"before_compaction": PreCompaction, "after_compaction": CompactionComplete, "session_end": SessionEnd},
		},
		{
			// No limit was measured for additionalContext (no size probe).
			Name: "gemini", Format: "gemini", ContextLimit: DefaultContextLimit, JSONOnly: true,
			Native: map[string]Event{"SessionStart": SessionStart, "BeforeAgent": PromptSubmit, "AfterAgent": Stop,
				"PreCompress": PreCompaction, "SessionEnd": SessionEnd},
		},
	}
}

// Lookup returns the harness called name, as the caller's own copy, and
// whether there is one.
func Lookup(name string) (*Harness, bool) {
	for _, h := range harnessTable() {
		if h.Name == name {
			return &h, true
		}
	}
	return nil, false
}

// Names lists the names of every supported harness in the fixed order
// doctor and the help text use (not alphabetical: the order is
// user-visible and kept as it was).
func Names() []string {
	var names []string
	for _, h := range harnessTable() {
		names = append(names, h.Name)
	}
	return names
}

// Payload is a harness's hook input, normalised. Claude Code, Codex and
// Gemini CLI send these fields themselves; the OpenCode and OpenClaw plugins
// memvault installs send the same names.
type Payload struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	CWD            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	Source         string `json:"source"`  // session start: startup, resume, clear, compact
	Trigger        string `json:"trigger"` // compaction: manual, auto
	Prompt         string `json:"prompt"`
	PromptID       string `json:"prompt_id"`
	CompactSummary string `json:"compact_summary"`
	LastAssistant  string `json:"last_assistant_message"`
	PromptResponse string `json:"prompt_response"` // Gemini AfterAgent
	Reason         string `json:"reason"`
}

// MaxPayload bounds what a hook reads from stdin. Payloads are small; a
// larger one is not a harness talking to us and is ignored (fail open).
const MaxPayload = 8 << 20

// stripHookContext removes the context Gemini CLI prepends to a prompt from
// an earlier hook's additionalContext: a <hook_context> element at the very
// start, up to its first closing tag, and the ASCII white space after it.
// A prompt that does not start with the element, or never closes it, is
// returned as is.
func stripHookContext(prompt string) string {
	rest, ok := strings.CutPrefix(prompt, "<hook_context>")
	if !ok {
		return prompt
	}
	_, rest, ok = strings.Cut(rest, "</hook_context>")
	if !ok {
		return prompt
	}
	return strings.TrimLeft(rest, asciiSpace)
}

// asciiSpace is the white space of RE2's \s, which Unicode-aware
// strings.TrimSpace goes beyond.
const asciiSpace = "\t\n\f\r "

// Parse decodes a payload and resolves the runtime event: from the event
// argument (a runtime or a native name), else from hook_event_name.
func Parse(h *Harness, eventArg string, data []byte) (Event, Payload, error) {
	var p Payload
	if err := json.Unmarshal(data, &p); err != nil {
		return "", p, fmt.Errorf("payload: not a json object: %v", err)
	}
	ev, err := h.resolve(eventArg, p.HookEventName)
	if err != nil {
		return "", p, err
	}
	p.Prompt = strings.TrimSpace(stripHookContext(p.Prompt))
	if p.LastAssistant == "" {
		p.LastAssistant = p.PromptResponse
	}
	// A NUL (\u0000 in the payload) is kept as U+FFFD: git refuses one in
	// a commit message, and the text a hook captures must not be lost.
	for _, f := range []*string{&p.Prompt, &p.LastAssistant, &p.CompactSummary} {
		*f = vault.CleanText(*f)
	}
	return ev, p, nil
}

func (h *Harness) resolve(arg, native string) (Event, error) {
	for _, name := range []string{arg, native} {
		if name == "" {
			continue
		}
		for _, e := range Events {
			if Event(name) == e {
				return e, nil
			}
		}
		if e, ok := h.Native[name]; ok {
			return e, nil
		}
		return "", fmt.Errorf("%s: unknown event %q", h.Name, name)
	}
	return "", fmt.Errorf("%s: no event named", h.Name)
}

// Render returns what to print for event ev with context text: the
// harness's own shape, or nothing when it accepts no context there.
func Render(h *Harness, ev Event, context string) []byte {
	injects := ev == SessionStart || ev == PromptSubmit
	if !injects || context == "" {
		if h.JSONOnly {
			return []byte("{}\n")
		}
		return nil
	}
	switch h.Name {
	case "claude-code", "gemini":
		native := map[Event]string{SessionStart: "SessionStart", PromptSubmit: "UserPromptSubmit"}[ev]
		if h.Name == "gemini" && ev == PromptSubmit {
			native = "BeforeAgent"
		}
		out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]string{
			"hookEventName": native, "additionalContext": context}})
		return append(out, '\n')
	}
	// Codex, and the plugins: plain text.
	return []byte(context + "\n")
}
