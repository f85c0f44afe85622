package ops

import (
	"fmt"
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/transcript"
)

// ExportMarkdown writes ex for a person to read: what it holds, the heads
// as they stood, the events as a table and as the ledger's lines, the
// nodes, the messages one per line, and the manifest in sha256sum's form.
// Every file's text goes in a fence longer than any run of backticks it
// holds, so nothing in it can end the fence early.
func ExportMarkdown(ex *Export) []byte {
	var b strings.Builder
	what := "thread " + ex.Scope.Thread
	if ex.Scope.Session != "" {
		what = "session " + ex.Scope.Session
	}
	fmt.Fprintf(&b, "# memvault export: %s\n\n", OneLine(what))
	if ex.Scope.Since != "" {
		fmt.Fprintf(&b, "- events at or after %s\n", ex.Scope.Since)
	}
	fmt.Fprintf(&b, "- %d events, %d nodes, %d transcripts, %d heads\n", len(ex.Events), len(ex.Nodes), len(ex.Transcripts), len(ex.Heads))
	fmt.Fprintf(&b, "- source ledger's tip: `%s`\n", ex.Tip)
	fmt.Fprintf(&b, "- manifest sha256: `%s` (below; `memvault export --format json` writes the form `memvault import` reads)\n", ex.ManifestSHA256)

	b.WriteString("\n## Heads\n")
	for _, h := range ex.Heads {
		note := ""
		if h.Rendered {
			note = " (never written: rendered for the export)"
		}
		fmt.Fprintf(&b, "\n### %s%s\n\n", h.Path, note)
		fence(&b, "markdown", h.Text)
	}

	b.WriteString("\n## Events\n\n")
	b.WriteString("| time | id | kind | source | thread | text |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, line := range ex.Events {
		ev, _, err := vault.ParseLine([]byte(line))
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s |\n", ev.TS, ev.ID, cell(ev.Kind), cell(orDash(ev.Source)),
			cell(orDash(ev.Thread)), cell(Clip(OneLine(ev.Text), 200)))
	}
	b.WriteString("\nThe ledger's lines, verbatim (each with its hash):\n\n")
	fence(&b, "jsonl", strings.Join(ex.Events, "\n")+"\n")

	if len(ex.Nodes) > 0 {
		b.WriteString("\n## Nodes\n")
		for _, n := range ex.Nodes {
			fmt.Fprintf(&b, "\n### %s\n\n", n.Path)
			fence(&b, "markdown", n.Text)
		}
	}
	if len(ex.Transcripts) > 0 {
		b.WriteString("\n## Transcripts\n")
		for _, t := range ex.Transcripts {
			fmt.Fprintf(&b, "\n### %s/%s: messages %d-%d of %d\n\n", OneLine(t.Agent), OneLine(t.Session), t.From, t.To, t.Total)
			var lines []string
			for _, p := range t.Parts {
				for _, l := range strings.Split(strings.TrimSuffix(p.Text, "\n"), "\n") {
					m, err := transcript.DecodeLine([]byte(l))
					if err != nil {
						continue
					}
					ts := ""
					if !m.TS.IsZero() {
						ts = m.TS.UTC().Format("2006-01-02T15:04:05Z") + " "
					}
					lines = append(lines, fmt.Sprintf("%d %s%s: %s", m.N, ts, m.Role, OneLine(m.Text)))
				}
			}
			fence(&b, "text", strings.Join(lines, "\n")+"\n")
		}
	}
	b.WriteString("\n## Manifest\n\n")
	var m strings.Builder
	for _, e := range ex.Manifest {
		fmt.Fprintf(&m, "%s  %s\n", e.SHA256, e.Name)
	}
	fence(&b, "text", m.String())
	return []byte(b.String())
}

// fence writes text in a fenced block whose fence is longer than any run
// of backticks in text.
func fence(b *strings.Builder, lang, text string) {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	fmt.Fprintf(b, "%s%s\n%s%s\n", f, lang, text, f)
}

// cell keeps a table cell in its cell: a pipe is escaped.
func cell(s string) string { return strings.ReplaceAll(OneLine(s), "|", `\|`) }
