package transcript

import (
	"encoding/json"
	"time"
)

// Role says who produced a message. The set is closed so that every reader
// of the vault can switch on it; harness-specific roles are folded into it by
// the importers (Codex "developer" becomes RoleSystem, Gemini "gemini" becomes
// RoleAssistant, a tool call or tool result becomes RoleTool).
type Role string

// The four roles a stored message can have.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
	RoleSystem    Role = "system"
)

// Valid reports whether r is one of the four stored roles.
func (r Role) Valid() bool {
	switch r {
	case RoleUser, RoleAssistant, RoleTool, RoleSystem:
		return true
	}
	return false
}

// Kinds refine a message beyond its role, so distillation can find a
// compaction summary or leave injected context out without knowing which
// harness wrote it.
const (
	// KindCompaction marks the summary a harness wrote when it compacted the
	// conversation (Claude Code isCompactSummary, Codex "compacted", Gemini
	// <state_snapshot>, OpenClaw "compaction").
	KindCompaction = "compaction"
	// KindBoundary marks a harness's note that a compaction happened, without
	// the summary itself (Claude Code compact_boundary).
	KindBoundary = "boundary"
	// KindContext marks text the harness injected rather than the person
	// typed: environment blocks, developer instructions, command caveats.
	KindContext = "context"
)

// Message is one normalised transcript message, stored as one JSON object per
// line in transcripts/<agent>/<session>.jsonl. See the package doc for the
// stored schema.
type Message struct {
	// ID is the source's own id for the message (Claude Code uuid, Codex item
	// id, Gemini record id, OpenClaw event id, generic id), so a search hit
	// traces back to its origin. When one source line yields several messages
	// the second and later get "#2", "#3"… appended; when the source has no
	// id, the importer uses "L<line>".
	ID string `json:"id"`
	// TS is when the source says the message was written, zero if unknown.
	TS time.Time `json:"ts,omitzero"`
	// Role is one of RoleUser, RoleAssistant, RoleTool, RoleSystem.
	Role Role `json:"role"`
	// Speaker names who spoke within the role: the model for an assistant
	// message where the source records it, the tool name for a tool message,
	// the harness for a system message, "user" for a person.
	Speaker string `json:"speaker,omitempty"`
	// Kind refines the role; see KindCompaction and friends. Empty for
	// ordinary conversation.
	Kind string `json:"kind,omitempty"`
	// Text is the searchable text: what was said, or for a tool message a
	// rendering of its input or its output.
	Text string `json:"text"`
	// Tool is set on RoleTool messages.
	Tool *ToolCall `json:"tool,omitempty"`
	// Source points back at the line the message came from.
	Source Source `json:"src"`
}

// ToolCall is the tool part of a RoleTool message. A harness usually writes
// the call and its result as two records; each becomes its own message,
// linked by CallID.
type ToolCall struct {
	Name   string `json:"name,omitempty"`
	CallID string `json:"call_id,omitempty"`
	// Input is the call's arguments as JSON, kept structured so the vault can
	// show the exact command. Absent on a result.
	Input json.RawMessage `json:"input,omitempty"`
	// Output is the result text. Absent on a call.
	Output string `json:"output,omitempty"`
	// Error is true when the harness marked the result as failed.
	Error bool `json:"error,omitempty"`
}

// Source locates a message in the file it was imported from.
type Source struct {
	// Format is the importer that read it ("claude-code", "codex", …).
	Format Format `json:"format"`
	// Line is the 1-based line number in the source file.
	Line int `json:"line"`
	// Offset is the byte offset of the start of that line.
	Offset int64 `json:"offset"`
	// Type is the source's own record type ("assistant", "response_item/
	// function_call", "message/toolResult"), for debugging an import.
	Type string `json:"type,omitempty"`
}
