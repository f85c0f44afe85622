// Package transcript owns Tier 3's messages: it reads the session
// transcripts agent harnesses write and turns them into memvault's
// normalised messages, redacting secrets on the way, and it names and reads
// back the vault's own transcripts. Parsing is a pure library: it reads
// from an io.ReaderAt and returns values. Reading a vault transcript goes
// through the vault's fileio.Root; writing one is the engine's transaction's
// business (vault/transcripts.go), never this package's.
//
// # Stored form
//
// A vault transcript, named by a Ref (agent and session key), is
// transcripts/<agent>/<session>.jsonl and, past a size, the parts
// <session>.1.jsonl, <session>.2.jsonl, … (ref.go; the session key encoded
// by SessionFileName). It holds one Message per line, with its sequence
// number n, in the vault's compact shape (line.go; docs/LINEAGE.md): the
// source as one string, a tool result's output stored once, no HTML
// escapes. Read, ReadFrom, EndOf and Sessions read it back (read.go,
// readfrom.go).
//
//	{"n":1,"id":"fd5459cf-…","ts":"2026-11-22T03:59:47.82Z","role":"user","speaker":"user",
//	 "text":"hello","src":"claude-code:3@346/user"}
//	{"n":2,"id":"8ff1ce4e-…","ts":"…","role":"tool","speaker":"Bash","text":"Bash: echo hi",
//	 "tool":{"name":"Bash","call_id":"toolu_01…","input":{"command":"echo hi"}},
//	 "src":"claude-code:29@28916/assistant/tool_use"}
//
// Vaults written earlier hold the first shape, Message as encoding/json
// writes it (src an object); the vault reads both.
//
// Fields:
//
//	id       string   the source's own id (Claude Code uuid, Codex item id, Gemini
//	                  record or tool-call id, OpenClaw event id, generic id); "#2",
//	                  "#3"… appended when one source line gives several messages;
//	                  "L<line>" when the source has none
//	ts       string   RFC 3339 UTC; omitted when the source has no time
//	role     string   user | assistant | tool | system
//	speaker  string   "user", the model name, the tool name, or the harness name
//	kind     string   optional: compaction (a compaction summary), boundary (a
//	                  "compacted here" marker), context (text the harness injected:
//	                  environment, instructions, command caveats), or a
//	                  harness-specific system subtype
//	text     string   searchable text, already redacted
//	tool     object   role tool only: name, call_id, input (JSON, redacted),
//	                  output (text, redacted), error (bool); output_is_text (bool)
//	                  instead of output when the output is the text
//	src      string   format:line[@offset][/type]: format, line (1-based), offset
//	                  (byte offset of the line's start, left out when 0) and
//	                  type (the source record type) of the origin
//
// A tool call and its result are two messages sharing tool.call_id. Readers
// must ignore fields they do not know and a torn last line.
//
// # Importing
//
// Parse reads complete lines from a cursor and returns the messages, the
// cursor to continue from, and Stats that count every line that gave no
// message, by type: a format change in a harness shows up as Unknown counts,
// never as an error. A last line without its newline is left for the next
// call. The formats:
//
//	claude-code  ~/.claude/projects/<cwd>/<session>.jsonl
//	codex        $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl
//	gemini       ~/.gemini/tmp/<project>/chats/session-<ts>-<id8>.jsonl
//	openclaw     event_json of $OPENCLAW_STATE_DIR/agents/main/agent/openclaw-agent.sqlite,
//	             table transcript_events, one session's rows by seq, one per line:
//	             SELECT event_json FROM transcript_events WHERE session_id=? ORDER BY seq
//	             (rows whose event_json is NULL hold zstd-compressed JSON in
//	             event_zstd; an exporter must inflate them)
//	generic      {"id","ts","role","speaker","text"} per line, optional "kind" and
//	             "tool"; the stored form is valid generic input
//
// # Redaction
//
// Parse redacts by default (Options.NoRedact turns it off), so its output
// can go to the vault as is. The rules live in package vault/redact, which
// also redacts any other text, such as a hook payload or a ledger event.
package transcript
