package transcript

import (
	"strings"
	"unicode/utf8"
)

// Harness markup: the tags the harnesses wrap around what they put into a
// conversation themselves (a slash command's name, a hook's context, an
// environment block). The stored transcript keeps every byte of it (tier 3
// is lossless); what people and agents read (a node, a head, a recall
// snippet) goes through StripMarkup, which applies this one table.
//
// drop removes the element with what it holds; otherwise only the tags go
// and what they hold stays (a slash command's name and arguments are what
// the person typed).
var markupTable = []struct {
	open, close string
	drop        bool
	harness     string
}{
	// Claude Code
	{"<command-name>", "</command-name>", false, "claude-code"},
	{"<command-message>", "</command-message>", true, "claude-code"},
	{"<command-args>", "</command-args>", false, "claude-code"},
	{"<command-contents>", "</command-contents>", true, "claude-code"},
	{"<local-command-stdout>", "</local-command-stdout>", true, "claude-code"},
	{"<local-command-stderr>", "</local-command-stderr>", true, "claude-code"},
	{"<local-command-caveat>", "</local-command-caveat>", true, "claude-code"},
	{"<system-reminder>", "</system-reminder>", true, "claude-code, opencode"},
	{"<user-prompt-submit-hook>", "</user-prompt-submit-hook>", true, "claude-code"},
	{"<session-start-hook>", "</session-start-hook>", true, "claude-code"},
	{"<tools-used-before-summary>", "</tools-used-before-summary>", true, "claude-code"},
	{"<task-notification>", "</task-notification>", true, "claude-code"},
	{"<ide_selection>", "</ide_selection>", true, "claude-code"},
	{"<ide_opened_file>", "</ide_opened_file>", true, "claude-code"},
	{"<bash-input>", "</bash-input>", false, "claude-code"},
	{"<bash-stdout>", "</bash-stdout>", true, "claude-code"},
	{"<bash-stderr>", "</bash-stderr>", true, "claude-code"},
	// Codex
	{"<environment_context>", "</environment_context>", true, "codex"},
	{"<user_instructions>", "</user_instructions>", true, "codex"},
	{"<permissions instructions>", "</permissions instructions>", true, "codex"},
	{"<skills_instructions>", "</skills_instructions>", true, "codex"},
	{"<turn_aborted>", "</turn_aborted>", true, "codex"},
	{"<user_shell_command>", "</user_shell_command>", true, "codex"},
	// Gemini CLI
	{"<hook_context>", "</hook_context>", true, "gemini"},
	{"<session_context>", "</session_context>", true, "gemini"},
	{"<untrusted_context>", "</untrusted_context>", false, "gemini"},
	{"<state_snapshot>", "</state_snapshot>", false, "gemini"},
	// OpenClaw
	{"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>", "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>", true, "openclaw"},
}

// MarkupTags lists the opening and closing tags StripMarkup removes, for
// the documentation and its test.
func MarkupTags() []string {
	out := make([]string, 0, 2*len(markupTable))
	for _, m := range markupTable {
		out = append(out, m.open, m.close)
	}
	return out
}

// StripMarkup returns s without harness markup (markupTable): an element
// that is dropped goes with what it holds, the others lose only their
// tags. An element never closed is dropped to the end of s (a clipped
// text), a stray closing tag is removed. Blank lines left behind are
// folded, and the result is trimmed. A text without '<' is returned as is.
func StripMarkup(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		b.WriteString(s[i : i+j])
		i += j
		n, keepFrom, keepTo := matchMarkup(s[i:])
		if n == 0 {
			b.WriteByte('<')
			i++
			continue
		}
		changed = true
		if keepTo > keepFrom {
			b.WriteString(s[i+keepFrom : i+keepTo])
		}
		i += n
	}
	if !changed {
		return s
	}
	return foldBlankLines(b.String())
}

// matchMarkup reports the markup s starts with: n bytes long (0: none),
// of which s[keepFrom:keepTo] is kept.
func matchMarkup(s string) (n, keepFrom, keepTo int) {
	for _, m := range markupTable {
		if strings.HasPrefix(s, m.close) {
			return len(m.close), 0, 0
		}
		if !strings.HasPrefix(s, m.open) {
			continue
		}
		body := s[len(m.open):]
		end := strings.Index(body, m.close)
		if end < 0 {
			if m.drop {
				return len(s), 0, 0
			}
			return len(m.open), 0, 0
		}
		n = len(m.open) + end + len(m.close)
		if m.drop {
			return n, 0, 0
		}
		return n, len(m.open), len(m.open) + end
	}
	return 0, 0, 0
}

// foldBlankLines folds the runs of spaces a removed element leaves inside
// a line (its indentation stays), folds runs of blank lines into one and
// trims the text.
func foldBlankLines(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := false
	for _, l := range lines {
		body := strings.TrimLeft(l, " \t")
		l = l[:len(l)-len(body)] + strings.Join(strings.Fields(body), " ")
		if strings.TrimSpace(l) == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// CutWords returns s cut to at most n runes at a word boundary, with an
// ellipsis when it was cut; a single word longer than n is cut inside.
func CutWords(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	cut := n - 1
	for i := cut; i > n/2; i-- {
		if r[i] == ' ' || r[i] == '\n' || r[i] == '\t' {
			cut = i
			break
		}
	}
	return strings.TrimRight(string(r[:cut]), " \n\t,;:") + "…"
}
