package transcript

import (
	"encoding/json"
	"strings"
)

// codex reads a Codex rollout file
// ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl): one
// {timestamp, type, payload} object per line. The conversation is in the
// "response_item" lines (the Responses API items sent to and received from
// the model); "event_msg" lines repeat the same content for the UI and are
// skipped so nothing is imported twice. A "compacted" line carries the
// summary that replaced the history.
type codex struct{}

var codexSkip = map[string]bool{
	"session_meta": true, "turn_context": true, "world_state": true,
	"token_usage_record": true, "event_msg": true,
}

type codexLine struct {
	Timestamp any             `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    json.RawMessage `json:"action"`
	Message   string          `json:"message"`   // compacted
	WindowID  string          `json:"window_id"` // compacted
}

// codexContextPrefixes mark user-role items that Codex writes itself.
var codexContextPrefixes = []string{
	"<environment_context>", "<user_instructions>", "<permissions instructions>",
	"<skills_instructions>", "# AGENTS.md instructions", "<turn_aborted>",
}

func (codex) line(p *parser, raw []byte) {
	var l codexLine
	if json.Unmarshal(raw, &l) != nil {
		p.stats.Invalid++
		return
	}
	var it codexItem
	if len(l.Payload) > 0 && l.Payload[0] == '{' {
		_ = json.Unmarshal(l.Payload, &it)
	}
	base := Message{ID: it.ID, TS: parseTime(l.Timestamp)}
	switch l.Type {
	case "response_item":
		codexItemLine(p, it, base)
	case "compacted":
		m := base
		m.ID = it.WindowID
		m.Role, m.Speaker, m.Kind, m.Text = RoleSystem, string(Codex), KindCompaction, it.Message
		p.emit(m, "compacted")
	default:
		key := l.Type
		if l.Type == "event_msg" && it.Type != "" {
			key += "/" + it.Type
		}
		if codexSkip[l.Type] {
			p.skip(key)
		} else {
			p.unknown(key)
		}
	}
}

func codexItemLine(p *parser, it codexItem, base Message) {
	srcType := "response_item/" + it.Type
	switch it.Type {
	case "message":
		m := base
		m.Text = textOf(it.Content)
		switch it.Role {
		case "user":
			m.Role, m.Speaker = RoleUser, "user"
			for _, pre := range codexContextPrefixes {
				if strings.HasPrefix(strings.TrimSpace(m.Text), pre) {
					m.Role, m.Speaker, m.Kind = RoleSystem, string(Codex), KindContext
					break
				}
			}
		case "assistant":
			m.Role, m.Speaker = RoleAssistant, string(Codex)
		case "developer", "system":
			m.Role, m.Speaker, m.Kind = RoleSystem, string(Codex), KindContext
		default:
			p.unknown(srcType + "/" + it.Role)
			return
		}
		if strings.TrimSpace(m.Text) == "" {
			p.skip(srcType + "/empty")
			return
		}
		p.emit(m, srcType+"/"+it.Role)
	case "function_call", "custom_tool_call", "local_shell_call":
		args := it.Arguments
		if len(args) == 0 {
			args = it.Input
		}
		if len(args) == 0 {
			args = it.Action
		}
		in := rawInput(args)
		name := it.Name
		if name == "" {
			name = it.Type
		}
		m := base
		if m.ID == "" {
			m.ID = it.CallID
		}
		m.Role, m.Speaker, m.Text = RoleTool, name, inputText(name, in)
		m.Tool = &ToolCall{Name: name, CallID: it.CallID, Input: in}
		p.emit(m, srcType)
	case "function_call_output", "custom_tool_call_output":
		out := codexOutput(it.Output)
		m := base
		if m.ID == "" && it.CallID != "" {
			m.ID = it.CallID + ":output"
		}
		m.Role, m.Text = RoleTool, out
		m.Tool = &ToolCall{CallID: it.CallID, Output: out}
		p.emit(m, srcType)
	case "reasoning", "web_search_call", "image_generation_call", "ghost_snapshot", "compaction":
		p.skip(srcType)
	default:
		p.unknown(srcType)
	}
}

// codexOutput reads a tool output, which is a string or an object with the
// text in "content" (older rollouts) or a list of content items.
func codexOutput(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	if v[0] == '"' || v[0] == '[' {
		return textOf(v)
	}
	var o struct {
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	if json.Unmarshal(v, &o) == nil {
		if s := textOf(o.Content); s != "" {
			return s
		}
		if s := textOf(o.Output); s != "" {
			return s
		}
	}
	return string(v)
}
