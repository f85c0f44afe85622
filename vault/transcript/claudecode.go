package transcript

import (
	"encoding/json"
	"strings"
)

// claudeCode reads Claude Code's project JSONL
// (~/.claude/projects/<cwd>/<session>.jsonl). Anthropic calls the format
// internal, so every field is optional here. Message lines are "user",
// "assistant" and "system"; each assistant content block (text, tool_use)
// usually gets its own line with its own uuid. Bookkeeping lines are skipped.
type claudeCode struct{}

// claudeSkip lists line types that carry no conversation.
var claudeSkip = map[string]bool{
	"queue-operation": true, "attachment": true, "atis-latch": true,
	"api-request-shape": true, "api-request-blob": true, "api-request": true,
	"last-prompt": true, "cost-state": true, "tools-used": true, "mode": true,
	"summary": true, "file-history-snapshot": true, "custom-title": true,
	"tag": true, "progress": true,
}

type claudeLine struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	UUID             string          `json:"uuid"`
	Timestamp        any             `json:"timestamp"`
	IsMeta           bool            `json:"isMeta"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	Content          json.RawMessage `json:"content"` // system lines
	Message          struct {
		Role    string          `json:"role"`
		Model   string          `json:"model"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (claudeCode) line(p *parser, raw []byte) {
	var l claudeLine
	if json.Unmarshal(raw, &l) != nil {
		p.stats.Invalid++
		return
	}
	base := Message{ID: l.UUID, TS: parseTime(l.Timestamp)}
	switch l.Type {
	case "user":
		claudeUser(p, l, base)
	case "assistant":
		claudeAssistant(p, l, base)
	case "system":
		text := textOf(l.Content)
		if text == "" {
			p.skip("system/" + l.Subtype)
			return
		}
		m := base
		m.Role, m.Speaker, m.Text, m.Kind = RoleSystem, string(ClaudeCode), text, l.Subtype
		if l.Subtype == "compact_boundary" {
			m.Kind = KindBoundary
		}
		p.emit(m, "system/"+l.Subtype)
	default:
		if claudeSkip[l.Type] {
			p.skip(l.Type)
		} else {
			p.unknown(l.Type)
		}
	}
}

func claudeUser(p *parser, l claudeLine, base Message) {
	c := l.Message.Content
	if len(c) > 0 && c[0] == '"' {
		m := base
		m.Role, m.Speaker, m.Text = RoleUser, "user", textOf(c)
		switch {
		case l.IsCompactSummary:
			m.Role, m.Speaker, m.Kind = RoleSystem, string(ClaudeCode), KindCompaction
		case l.IsMeta || strings.HasPrefix(m.Text, "<local-command-stdout>"):
			m.Role, m.Speaker, m.Kind = RoleSystem, string(ClaudeCode), KindContext
		}
		p.emit(m, "user")
		return
	}
	var blocks []claudeBlock
	if json.Unmarshal(c, &blocks) != nil {
		p.unknown("user/content")
		return
	}
	var texts []string
	flush := func() {
		if len(texts) == 0 {
			return
		}
		m := base
		m.Role, m.Speaker, m.Text = RoleUser, "user", strings.Join(texts, "\n")
		if l.IsCompactSummary {
			m.Role, m.Speaker, m.Kind = RoleSystem, string(ClaudeCode), KindCompaction
		} else if l.IsMeta {
			m.Role, m.Speaker, m.Kind = RoleSystem, string(ClaudeCode), KindContext
		}
		p.emit(m, "user")
		texts = nil
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "image", "document":
			texts = append(texts, "["+b.Type+"]")
		case "tool_result":
			flush()
			out := textOf(b.Content)
			m := base
			m.Role, m.Text = RoleTool, out
			m.Tool = &ToolCall{CallID: b.ToolUseID, Output: out, Error: b.IsError}
			p.emit(m, "user/tool_result")
		default:
			p.skip("user/" + b.Type)
		}
	}
	flush()
}

func claudeAssistant(p *parser, l claudeLine, base Message) {
	var blocks []claudeBlock
	c := l.Message.Content
	if len(c) > 0 && c[0] == '"' {
		blocks = []claudeBlock{{Type: "text", Text: textOf(c)}}
	} else if json.Unmarshal(c, &blocks) != nil {
		p.unknown("assistant/content")
		return
	}
	speaker := l.Message.Model
	if speaker == "" || speaker == "<synthetic>" {
		speaker = string(ClaudeCode)
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) == "" {
				p.skip("assistant/empty")
				continue
			}
			m := base
			m.Role, m.Speaker, m.Text = RoleAssistant, speaker, b.Text
			p.emit(m, "assistant")
		case "tool_use", "server_tool_use":
			in := rawInput(b.Input)
			m := base
			m.Role, m.Speaker, m.Text = RoleTool, b.Name, inputText(b.Name, in)
			m.Tool = &ToolCall{Name: b.Name, CallID: b.ID, Input: in}
			p.emit(m, "assistant/tool_use")
		default: // thinking, redacted_thinking: private reasoning, not kept
			p.skip("assistant/" + b.Type)
		}
	}
}
