package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"sync"
)

// gemini reads a Gemini CLI chat file
// (~/.gemini/tmp/<project>/chats/session-<ts>-<id8>.jsonl). Its lines are:
//
//   - a header {sessionId, projectHash, startTime, lastUpdated, kind},
//     written again at every resume;
//   - {"$set": {...}} updates; a "messages" update replaces the whole
//     history at a resume and after a compression, with fresh ids for the
//     compressed part, so only its compression summary (a user part starting
//     <state_snapshot>) is imported from it;
//   - message records {id, timestamp, type: user|gemini|info|error|warning,
//     content, toolCalls, thoughts, tokens, model}. A "gemini" record is
//     written when the answer arrives and written again, same id, once its
//     tool calls ran, now with toolCalls (and their results).
//
// Because records are rewritten, an id seen on an earlier line is not
// imported again; only tool calls new in the rewrite are. To know what an
// earlier call imported, the importer scans the ids on the lines before the
// cursor once per call.
type gemini struct {
	seen   map[string]bool
	primed bool
}

// geminiIDPattern finds the ids in a Gemini session record. It is compiled
// on first use: its bounded repeat makes it the costliest pattern of the
// package, and most commands never read a Gemini session.
var geminiIDPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`"id"\s*:\s*"((?:[^"\\]|\\.){1,512})"`)
})

type geminiRecord struct {
	ID          string          `json:"id"`
	Timestamp   any             `json:"timestamp"`
	Type        string          `json:"type"`
	Content     json.RawMessage `json:"content"`
	Model       string          `json:"model"`
	ToolCalls   []geminiCall    `json:"toolCalls"`
	SessionID   string          `json:"sessionId"`
	Set         json.RawMessage `json:"$set"`
	DisplayText string          `json:"displayContent"`
}

type geminiCall struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Result json.RawMessage `json:"result"`
	Status string          `json:"status"`
}

type geminiPart struct {
	Text             string `json:"text"`
	FunctionResponse *struct {
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
	FunctionCall json.RawMessage `json:"functionCall"`
}

// hookContextRE matches the context Gemini CLI prepends to a prompt from a
// hook's additionalContext.
var hookContextRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)^\s*<hook_context>.*?</hook_context>\s*`)
})

func (g *gemini) prime(p *parser) {
	g.primed = true
	g.seen = map[string]bool{}
	if p.start == 0 {
		return
	}
	r := bufio.NewReader(io.NewSectionReader(p.src, 0, p.start))
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			g.addIDs(bytes.TrimRight(line, "\r\n"))
		}
		if err != nil {
			return
		}
	}
}

// addIDs records every id on a line. It sees the same lines, valid JSON
// objects only, whether they come before the cursor or in this call, so a
// split import and a whole one agree.
func (g *gemini) addIDs(raw []byte) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return
	}
	for _, m := range geminiIDPattern().FindAllSubmatch(t, -1) {
		g.seen[string(m[1])] = true
	}
}

func (g *gemini) line(p *parser, raw []byte) {
	if !g.primed {
		g.prime(p)
	}
	g.record(p, raw)
	g.addIDs(raw)
}

func (g *gemini) record(p *parser, raw []byte) {
	var r geminiRecord
	if json.Unmarshal(raw, &r) != nil {
		p.stats.Invalid++
		return
	}
	switch {
	case len(r.Set) > 0:
		g.set(p, r.Set)
		return
	case r.Type == "" && r.SessionID != "":
		p.skip("session")
		return
	}
	base := Message{ID: r.ID, TS: parseTime(r.Timestamp)}
	switch r.Type {
	case "user":
		if g.seen[r.ID] {
			p.skip("update")
			return
		}
		text, onlyResponses := geminiText(r.Content)
		if onlyResponses {
			// The tool results are imported with the gemini record's toolCalls.
			p.skip("user/functionResponse")
			return
		}
		m := base
		// Context a hook injected (additionalContext) is prepended to the
		// prompt as <hook_context>; it is not what the person typed.
		text = hookContextRE().ReplaceAllString(text, "")
		m.Role, m.Speaker, m.Text = RoleUser, "user", text
		if strings.HasPrefix(text, "<session_context>") {
			m.Role, m.Speaker, m.Kind = RoleSystem, string(Gemini), KindContext
		}
		p.emit(m, "user")
	case "gemini":
		speaker := r.Model
		if speaker == "" {
			speaker = string(Gemini)
		}
		if g.seen[r.ID] {
			p.skip("update")
		} else if text, _ := geminiText(r.Content); strings.TrimSpace(text) != "" {
			m := base
			m.Role, m.Speaker, m.Text = RoleAssistant, speaker, text
			p.emit(m, "gemini")
		}
		for _, tc := range r.ToolCalls {
			if tc.ID != "" && g.seen[tc.ID] {
				continue
			}
			in := rawInput(tc.Args)
			out := geminiResult(tc.Result)
			m := base
			m.ID = tc.ID
			if m.ID == "" {
				m.ID = r.ID
			}
			m.Role, m.Speaker, m.Text = RoleTool, tc.Name, inputText(tc.Name, in)
			if out != "" {
				m.Text += "\n" + out
			}
			m.Tool = &ToolCall{Name: tc.Name, CallID: tc.ID, Input: in, Output: out, Error: tc.Status == "error"}
			p.emit(m, "gemini/toolCall")
		}
	case "info", "error", "warning":
		if g.seen[r.ID] {
			p.skip("update")
			return
		}
		text, _ := geminiText(r.Content)
		m := base
		m.Role, m.Speaker, m.Kind, m.Text = RoleSystem, string(Gemini), r.Type, text
		p.emit(m, r.Type)
	default:
		p.unknown(r.Type)
	}
}

// set handles a {"$set": …} line: only a compression summary that was not
// seen before becomes a message.
func (g *gemini) set(p *parser, set json.RawMessage) {
	var s struct {
		Messages []geminiRecord `json:"messages"`
	}
	if json.Unmarshal(set, &s) != nil || s.Messages == nil {
		p.skip("$set")
		return
	}
	found := false
	for _, r := range s.Messages {
		if r.Type != "user" || g.seen[r.ID] {
			continue
		}
		text, _ := geminiText(r.Content)
		if !strings.HasPrefix(strings.TrimSpace(text), "<state_snapshot>") {
			continue
		}
		found = true
		p.emit(Message{ID: r.ID, TS: parseTime(r.Timestamp), Role: RoleSystem, Speaker: string(Gemini), Kind: KindCompaction, Text: text}, "$set/messages")
	}
	if !found {
		p.skip("$set")
	}
}

// geminiText returns the text of a content field (a string or a list of
// parts) and whether it held nothing but function responses.
func geminiText(v json.RawMessage) (string, bool) {
	if len(v) == 0 || v[0] != '[' {
		return textOf(v), false
	}
	var parts []geminiPart
	if json.Unmarshal(v, &parts) != nil {
		return "", false
	}
	var texts []string
	responses := 0
	for _, pt := range parts {
		switch {
		case pt.Text != "":
			texts = append(texts, pt.Text)
		case pt.FunctionResponse != nil:
			responses++
		}
	}
	return strings.Join(texts, "\n"), responses > 0 && len(texts) == 0
}

// geminiResult reads a tool call's result: a list of functionResponse parts
// whose response holds "output" (or "error"), else the raw JSON.
func geminiResult(v json.RawMessage) string {
	var parts []geminiPart
	if len(v) == 0 || json.Unmarshal(v, &parts) != nil {
		return ""
	}
	var outs []string
	for _, pt := range parts {
		if pt.FunctionResponse == nil {
			continue
		}
		var resp struct {
			Output *string `json:"output"`
			Error  *string `json:"error"`
		}
		switch {
		case json.Unmarshal(pt.FunctionResponse.Response, &resp) == nil && resp.Output != nil:
			outs = append(outs, *resp.Output)
		case resp.Error != nil:
			outs = append(outs, *resp.Error)
		default:
			outs = append(outs, string(pt.FunctionResponse.Response))
		}
	}
	return strings.Join(outs, "\n")
}
