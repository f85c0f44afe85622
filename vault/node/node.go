// Package node owns the temporal nodes' files and their index (DESIGN §5):
// a node's format, front matter plus a markdown body, encoded and parsed
// (node.go); the index of every node's front matter with the parents
// derived from condensed nodes' children, its filter and order
// (index.go); and the loader of that index from the month folders under
// nodes/, with its cache of headers in .state/nodes.tsv (cache.go,
// load.go). Writing a node inside a transaction and verifying the nodes
// the ledger names are the engine's (package vault), which builds on this.
package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Node kinds (DESIGN §5).
const (
	SessionSummary = "session-summary"
	Compaction     = "compaction"
	Condensed      = "condensed"
	// SelfSummary is the agent's periodic self-summary (docs/LINEAGE.md,
	// "Self-summaries"): open commitments, what changed, recurring
	// blockers and reflections, citing the ledger events it covers. It has
	// no span and no children: it stands over events, not transcripts.
	SelfSummary = "self-summary"
)

// Kinds lists the node kinds in a stable order.
func Kinds() []string { return []string{SessionSummary, Compaction, Condensed, SelfSummary} }

// Span is the part of a transcript a node covers: messages From to To
// (sequence numbers, inclusive) of the transcript at Path.
type Span struct {
	Path string `json:"path"`
	From int    `json:"from"`
	To   int    `json:"to"`
}

// Node is a temporal node: front matter plus a markdown body, written once
// to nodes/<agent>/<yyyy>/<mm>/<id>.md.
type Node struct {
	ID       string   `json:"id"`
	Kind     string   `json:"kind"`
	Agent    string   `json:"agent"`
	Session  string   `json:"session,omitempty"`
	Harness  string   `json:"harness,omitempty"`
	Threads  []string `json:"threads"`
	Children []string `json:"children"`
	Span     *Span    `json:"span,omitempty"`
	Created  string   `json:"created"`
	Title    string   `json:"title"`
	Path     string   `json:"path"`
	// Summary says who wrote the node's summary when memvault.toml names
	// a summariser ([summarise], docs/EXECUTORS.md): "model" (the
	// executor SummaryBy, its result's SHA-256 SummaryChecksum) or
	// "deterministic" (SummaryFallback: why the model's was not used).
	// All four are empty, and left out of the file, otherwise.
	Summary         string `json:"summary,omitempty"`
	SummaryBy       string `json:"summary_by,omitempty"`
	SummaryChecksum string `json:"summary_checksum,omitempty"`
	SummaryFallback string `json:"summary_fallback,omitempty"`
	// Supersedes lists, on a session summary, the earlier summaries of
	// the same agent and session it replaces (a session resumed, a
	// retry over more messages): a session has one summary that counts,
	// and the index hides the others (Index.SupersededBy). Left out of
	// the file when empty.
	Supersedes []string `json:"supersedes,omitempty"`
	Body       string   `json:"body,omitempty"`
	// TranscriptTokens is, on a node with a span, the size of its
	// transcript up to the span's end: render.Tokens summed over messages
	// 1 to Span.To, memvault's own injected context left out. It is not
	// part of the file (nil when not measured); node.created records it as
	// data.transcript_tokens, for the metrics' token_efficiency
	// (docs/API.md, "Context retention and token efficiency").
	TranscriptTokens *int `json:"-"`
}

// EventData is the data of the node.created event that records n: its
// kind, path, span and children, and transcript_tokens when measured.
func (n *Node) EventData() json.RawMessage {
	d := map[string]any{"kind": n.Kind, "path": n.Path, "span": n.Span, "children": n.Children}
	if n.TranscriptTokens != nil {
		d["transcript_tokens"] = *n.TranscriptTokens
	}
	data, _ := json.Marshal(d)
	return data
}

// Who wrote a node's summary (Node.Summary).
const (
	SummaryModel         = "model"
	SummaryDeterministic = "deterministic"
)

// frontMatter lists the front-matter fields in their fixed order (so the
// same node always has the same bytes) with where each lives in the Node;
// writing and reading both go through it.
func (n *Node) frontMatter() []struct {
	key string
	ptr any
} {
	return []struct {
		key string
		ptr any
	}{
		{"id", &n.ID}, {"kind", &n.Kind}, {"agent", &n.Agent}, {"session", &n.Session},
		{"harness", &n.Harness}, {"threads", &n.Threads}, {"children", &n.Children},
		{"span", &n.Span}, {"created", &n.Created}, {"title", &n.Title},
		{"summary", &n.Summary}, {"summary_by", &n.SummaryBy}, {"summary_checksum", &n.SummaryChecksum},
		{"summary_fallback", &n.SummaryFallback}, {"supersedes", &n.Supersedes},
	}
}

// optionalField reports whether the front-matter field key is written
// only when it is set: the summariser's and supersedes, so that a node
// made without them has the bytes (and so the id) it always had.
func optionalField(key string) bool {
	return strings.HasPrefix(key, "summary") || key == "supersedes"
}

// Encode renders the node file. Every front-matter value is written as JSON,
// which is also valid YAML, so the file reads well, parses with any YAML
// library, and round-trips exactly. It sets nil Threads and Children to
// empty lists, as the file shows them.
func (n *Node) Encode() []byte {
	n.Threads, n.Children = nonNil(n.Threads), nonNil(n.Children)
	var b bytes.Buffer
	b.WriteString("---\n")
	for _, f := range n.frontMatter() {
		if p, ok := f.ptr.(*string); ok && *p == "" && optionalField(f.key) {
			continue
		}
		if p, ok := f.ptr.(*[]string); ok && len(*p) == 0 && optionalField(f.key) {
			continue
		}
		var v bytes.Buffer
		enc := json.NewEncoder(&v)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(f.ptr)
		fmt.Fprintf(&b, "%s: %s\n", f.key, strings.TrimSuffix(v.String(), "\n"))
	}
	b.WriteString("---\n\n")
	b.WriteString(strings.TrimRight(n.Body, "\n"))
	b.WriteString("\n")
	return b.Bytes()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Parse reads a node file. With headerOnly, the body is not kept.
func Parse(data []byte, headerOnly bool) (*Node, error) {
	if !bytes.HasPrefix(data, []byte("---\n")) {
		return nil, fmt.Errorf("no front matter")
	}
	rest := data[4:]
	end := bytes.Index(rest, []byte("\n---\n"))
	if end < 0 {
		return nil, fmt.Errorf("front matter not closed")
	}
	n := new(Node)
	fields := map[string]any{}
	for _, f := range n.frontMatter() {
		fields[f.key] = f.ptr
	}
	for line := range bytes.Lines(rest[:end+1]) {
		k, v, ok := strings.Cut(string(bytes.TrimSuffix(line, []byte("\n"))), ": ")
		dst, known := fields[k]
		if !ok || !known {
			continue
		}
		if err := json.Unmarshal([]byte(v), dst); err != nil {
			return nil, fmt.Errorf("front matter %s: %v", k, err)
		}
	}
	if n.ID == "" || n.Kind == "" || n.Agent == "" {
		return nil, fmt.Errorf("front matter lacks id, kind or agent")
	}
	if !headerOnly {
		n.Body = strings.TrimPrefix(string(rest[end+5:]), "\n")
	}
	return n, nil
}
