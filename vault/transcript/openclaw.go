package transcript

import (
	"encoding/json"
	"strings"
)

// openClaw reads OpenClaw session events, one JSON object per line. OpenClaw
// 2026.9 keeps them only in SQLite
// ($OPENCLAW_STATE_DIR/agents/main/agent/openclaw-agent.sqlite, table
// transcript_events, column event_json, ordered by seq per session_id); the
// caller exports those rows as JSONL (see doc.go). The events are the pi
// agent session format: "session", "model_change", "custom", "message"
// (role user, assistant or toolResult) and "compaction" (with the summary).
type openClaw struct{}

var openClawSkip = map[string]bool{
	"session": true, "model_change": true, "thinking_level_change": true,
	"custom": true, "label": true, "session_info": true,
}

type openClawLine struct {
	Type       string `json:"type"`
	CustomType string `json:"customType"`
	ID         string `json:"id"`
	Timestamp  any    `json:"timestamp"`
	Summary    string `json:"summary"` // compaction, branch_summary
	Message    struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		Model      string          `json:"model"`
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
		IsError    bool            `json:"isError"`
	} `json:"message"`
}

type openClawBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func (openClaw) line(p *parser, raw []byte) {
	var l openClawLine
	if json.Unmarshal(raw, &l) != nil {
		p.stats.Invalid++
		return
	}
	base := Message{ID: l.ID, TS: parseTime(l.Timestamp)}
	switch l.Type {
	case "message":
		openClawMessage(p, l, base)
	case "compaction", "branch_summary":
		m := base
		m.Role, m.Speaker, m.Kind, m.Text = RoleSystem, string(OpenClaw), KindCompaction, l.Summary
		p.emit(m, l.Type)
	default:
		key := l.Type
		if l.CustomType != "" {
			key += "/" + l.CustomType
		}
		if openClawSkip[l.Type] {
			p.skip(key)
		} else {
			p.unknown(key)
		}
	}
}

func openClawMessage(p *parser, l openClawLine, base Message) {
	msg := l.Message
	srcType := "message/" + msg.Role
	switch msg.Role {
	case "user":
		m := base
		m.Role, m.Speaker, m.Text = RoleUser, "user", textOf(msg.Content)
		p.emit(m, srcType)
	case "toolResult":
		out := textOf(msg.Content)
		m := base
		m.Role, m.Speaker, m.Text = RoleTool, msg.ToolName, out
		m.Tool = &ToolCall{Name: msg.ToolName, CallID: msg.ToolCallID, Output: out, Error: msg.IsError}
		p.emit(m, srcType)
	case "assistant":
		var blocks []openClawBlock
		if len(msg.Content) > 0 && msg.Content[0] == '"' {
			blocks = []openClawBlock{{Type: "text", Text: textOf(msg.Content)}}
		} else if json.Unmarshal(msg.Content, &blocks) != nil {
			p.unknown(srcType + "/content")
			return
		}
		speaker := msg.Model
		if speaker == "" {
			speaker = string(OpenClaw)
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				if strings.TrimSpace(b.Text) == "" {
					p.skip(srcType + "/empty")
					continue
				}
				m := base
				m.Role, m.Speaker, m.Text = RoleAssistant, speaker, b.Text
				p.emit(m, srcType)
			case "toolCall":
				in := rawInput(b.Arguments)
				m := base
				m.Role, m.Speaker, m.Text = RoleTool, b.Name, inputText(b.Name, in)
				m.Tool = &ToolCall{Name: b.Name, CallID: b.ID, Input: in}
				p.emit(m, srcType+"/toolCall")
			default:
				p.skip(srcType + "/" + b.Type)
			}
		}
	default:
		p.unknown(srcType)
	}
}
