package transcript

import (
	"encoding/json"
)

// generic reads memvault's documented interchange format, one object per
// line: {"id","ts","role","speaker","text"} with an optional "kind" and
// "tool":{"name","call_id","input","output","error"}. It is also the stored
// form minus "src", so a vault transcript can be imported again. A line with
// a role outside user|assistant|tool|system is counted as unknown.
type generic struct{}

type genericLine struct {
	ID      string          `json:"id"`
	TS      any             `json:"ts"`
	Role    Role            `json:"role"`
	Speaker string          `json:"speaker"`
	Kind    string          `json:"kind"`
	Text    string          `json:"text"`
	Tool    *genericToolRaw `json:"tool"`
}

type genericToolRaw struct {
	Name   string          `json:"name"`
	CallID string          `json:"call_id"`
	Input  json.RawMessage `json:"input"`
	Output string          `json:"output"`
	Error  bool            `json:"error"`
}

func (generic) line(p *parser, raw []byte) {
	var l genericLine
	if json.Unmarshal(raw, &l) != nil {
		p.stats.Invalid++
		return
	}
	if !l.Role.Valid() {
		p.unknown("role:" + string(l.Role))
		return
	}
	m := Message{ID: l.ID, TS: parseTime(l.TS), Role: l.Role, Speaker: l.Speaker, Kind: l.Kind, Text: l.Text}
	if l.Tool != nil {
		m.Tool = &ToolCall{Name: l.Tool.Name, CallID: l.Tool.CallID, Input: rawInput(l.Tool.Input), Output: l.Tool.Output, Error: l.Tool.Error}
	}
	p.emit(m, string(l.Role))
}
