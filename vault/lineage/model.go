package lineage

// Model-written summaries (docs/EXECUTORS.md, "Summaries"). When
// memvault.toml's [summarise] names an executor, a session summary, a
// compaction without a summary of its own, and a condensed node ask it for
// their summary text. The call is made first, outside the vault lock
// (SessionModel, CompactionModel, CondenseModels); the transaction that
// writes the node then takes the verified reply (Summarize, Compact,
// Condense with the Model in their options), or, on any failure, writes
// the deterministic summary and records why. The deterministic material
// stays in the node either way, and the node's lineage (its span, its
// children) is the same: a model's summary adds to the node, it replaces
// nothing of what it was made from.

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/executor"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/transcript"
)

// Bounds of what goes to the executor and what comes back.
const (
	// materialBytes bounds the material of one prompt: the transcript's
	// first messages and its last ones, the middle left out.
	materialBytes = 24 << 10
	// messageRunes bounds one message of the material.
	messageRunes = 1500
	// childRunes bounds one child node's body in a condensation's material.
	childRunes = 2000
	// modelRunes bounds the summary kept from the reply.
	modelRunes = 6000
)

// Model is a summary an executor was asked for, made before the
// transaction that writes its node: the verified reply (Text), or why
// there is none (Call.Err). What it was made from is kept too, so the
// transaction takes it only for the same material.
type Model struct {
	Call executor.Summary
	Text string // the reply's summary, redacted and cleaned; "" when it failed
	// From and Upto are the messages of the transcript the material
	// covered (sessions and compactions).
	From, Upto int
	// Children are the nodes the material covered (condensation).
	Children []string
	// Exists: a node of the same material holds a model's summary already;
	// no executor was asked.
	Exists bool
}

// ok reports whether m holds a verified reply.
func (m *Model) ok() bool { return m != nil && m.Call.Response != nil && m.Text != "" }

// summariser reads [summarise]: nil when it names no executor (summaries
// are deterministic, as without a summariser); a failed Model when it
// does not parse.
func summariser(v *vault.Vault) (executor.SummariseConfig, *Model) {
	cfg, on, err := executor.Summariser(v)
	if err != nil {
		return cfg, &Model{Call: executor.Summary{Code: executor.CodeConfig, Err: err}}
	}
	if !on {
		return cfg, nil
	}
	return cfg, &Model{}
}

// Summarising reports whether v's [summarise] names an executor that
// is registered and active (or its table does not parse: false). The
// hooks ask it to decide when a summary job may run (docs/HOOKS.md).
func Summarising(v *vault.Vault) bool {
	cfg, on, err := executor.Summariser(v)
	if err != nil || !on {
		return false
	}
	_, err = executor.SummaryEntry(v, cfg)
	return err == nil
}

// ModelOptions tune the calls.
type ModelOptions struct {
	Runner executor.Runner // the environment the executor is sanitised from
	// Limit caps the executor's time below [summarise]'s timeout (a hook's
	// budget); 0 leaves it.
	Limit time.Duration
	// NoCall: the caller may not wait for an executor now (a hook event
	// with no time for one); an executor that would be asked is a
	// failure of code CodeSkipped instead.
	NoCall bool
}

// CodeSkipped: the summary was made where no executor may be waited for.
const CodeSkipped = "skipped"

// ask runs the call of one summary and cleans its reply.
func ask(ctx context.Context, v *vault.Vault, cfg executor.SummariseConfig, m *Model, id, prompt string, opts ModelOptions) *Model {
	if opts.NoCall {
		e, err := executor.SummaryEntry(v, cfg)
		if err == nil {
			err = fmt.Errorf("summarise: executor %s: not asked: this writer may not wait for it", e.Name)
			m.Call = executor.Summary{Executor: e, Code: CodeSkipped, Err: err}
		} else {
			m.Call = executor.Summary{Executor: e, Code: executor.CodeOf(err), Err: err}
		}
		return m
	}
	prompt, _ = v.Redact(prompt) // the vault's text is redacted; this is a second pass
	m.Call = executor.Summarise(ctx, v, cfg, opts.Runner, id, prompt, opts.Limit)
	if m.Call.Response != nil {
		text, _ := v.Redact(cleanReply(m.Call.Response.Summary))
		if m.Text = text; text == "" {
			m.Call.Code = executor.CodeMalformed
			m.Call.Err = fmt.Errorf("executor %s: the summary is empty once cleaned", m.Call.Executor.Name)
			m.Call.Response = nil
		}
	}
	return m
}

// cleanReply keeps a reply's text fit for a node: valid UTF-8, no
// control characters but newlines and tabs, no blank margins, at most
// modelRunes.
func cleanReply(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, s)
	s = strings.ReplaceAll(strings.TrimSpace(s), "\r", "")
	return vault.Clip(s, modelRunes)
}

// SessionModel asks [summarise]'s executor for the summary of session t,
// outside any lock. It returns nil when no executor is named; otherwise a
// Model to pass to Summarize, failed or not. A session whose summary for
// its current messages is a model's already is not asked again.
func SessionModel(ctx context.Context, v *vault.Vault, t transcript.Ref, opts ModelOptions) (*Model, error) {
	cfg, m := summariser(v)
	if m == nil || m.Call.Err != nil {
		return m, nil
	}
	lines, last, err := material(v, t, 1)
	if err != nil || last == 0 {
		return nil, err // Summarize says what is wrong
	}
	m.From, m.Upto = 1, last
	if n, err := modelNode(v, nil, t, node.SessionSummary, 1, last); err != nil || n != nil {
		m.Exists = n != nil
		return m, err
	}
	prompt := fmt.Sprintf("Summarise this session of a coding agent for its long-term memory: what was asked, "+
		"what was done and decided, and what is left open. At most 200 words of markdown; answer with the summary alone.\n\n"+
		"Session %s of agent %s, messages %d–%d, as memvault keeps them (secrets redacted):\n\n%s",
		t.Session, t.Agent, 1, last, lines)
	return ask(ctx, v, cfg, m, "summary:"+t.Session, prompt, opts), nil
}

// CompactionModel asks [summarise]'s executor for the summary of the
// messages of session t a compaction node would cover now (those after
// the session's last compaction node), outside any lock: for `memvault
// compact` given no summary. nil when no executor is named.
func CompactionModel(ctx context.Context, v *vault.Vault, t transcript.Ref, opts ModelOptions) (*Model, error) {
	cfg, m := summariser(v)
	if m == nil || m.Call.Err != nil {
		return m, nil
	}
	ix, err := node.Lookup(v.Files(), []string{node.FieldNeedle(t.Session)}, nil)
	if err != nil {
		return nil, err
	}
	from := 1
	for _, n := range ix.Select(node.Filter{Agent: t.Agent, Session: t.Session, Kind: node.Compaction}) {
		if n.Span != nil && n.Span.To+1 > from {
			from = n.Span.To + 1
		}
	}
	lines, last, err := material(v, t, from)
	if err != nil || last < from {
		return nil, err
	}
	m.From, m.Upto = from, last
	prompt := fmt.Sprintf("Summarise this part of a coding agent's session, as the context it would keep after a compaction: "+
		"the task, what was done and decided, the state of the work, and what comes next. At most 300 words of markdown; "+
		"answer with the summary alone.\n\nSession %s of agent %s, messages %d–%d, as memvault keeps them (secrets redacted):\n\n%s",
		t.Session, t.Agent, from, last, lines)
	return ask(ctx, v, cfg, m, "compaction:"+t.Session, prompt, opts), nil
}

// material renders the conversation of t from message from on, each
// message clipped, the whole bounded by materialBytes: the first third
// of the budget from the start, the rest from the end, and a line saying
// which messages were left out between. It returns the last message's
// number (0: none).
func material(v *vault.Vault, t transcript.Ref, from int) (string, int, error) {
	var lines []string
	last := 0
	err := transcript.Read(v.Files(), t, from, 0, func(m transcript.Stored) error {
		last = m.N
		text := strings.TrimSpace(m.Text)
		switch {
		case text == "":
			return nil
		case m.Kind == transcript.KindCompaction:
			lines = append(lines, fmt.Sprintf("[%d] compaction summary: %s", m.N, vault.Clip(text, messageRunes)))
		case m.Kind != "":
			// injected context and boundaries are not the conversation
		case m.Role == transcript.RoleUser || m.Role == transcript.RoleAssistant:
			lines = append(lines, fmt.Sprintf("[%d] %s: %s", m.N, m.Role, vault.Clip(text, messageRunes)))
		}
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	return bounded(lines, materialBytes), last, nil
}

// bounded joins lines within about limit bytes: the first lines up to a
// third of it, then the last ones, with a line saying how many were left
// out between.
func bounded(lines []string, limit int) string {
	total := 0
	for _, l := range lines {
		total += len(l) + 1
	}
	if total <= limit {
		return strings.Join(lines, "\n")
	}
	limit -= 64 // the line that says what was left out
	head, size := 0, 0
	for head < len(lines) && size+len(lines[head])+1 <= limit/3 {
		size += len(lines[head]) + 1
		head++
	}
	tail := len(lines)
	for tail > head && size+len(lines[tail-1])+1 <= limit {
		tail--
		size += len(lines[tail]) + 1
	}
	out := append([]string{}, lines[:head]...)
	out = append(out, fmt.Sprintf("[… %d messages left out …]", tail-head))
	return strings.Join(append(out, lines[tail:]...), "\n")
}

// modelNode finds the node of kind of session t over messages from–to
// whose summary is a model's, read through tx when there is one (its
// nodes are the ones it will commit), else from the vault.
func modelNode(v *vault.Vault, tx *vault.Tx, t transcript.Ref, kind string, from, to int) (*node.Node, error) {
	var ix *node.Index
	var err error
	if tx != nil {
		ix, err = tx.Nodes()
	} else {
		ix, err = node.Lookup(v.Files(), []string{node.FieldNeedle(t.Session)}, nil)
	}
	if err != nil {
		return nil, err
	}
	for _, n := range ix.Select(node.Filter{Agent: t.Agent, Session: t.Session, Kind: kind}) {
		if n.Span == nil || n.Span.From != from || n.Span.To != to {
			continue
		}
		full, err := node.Read(v.Files(), n)
		if err != nil {
			continue // verify reports it
		}
		if full.Summary == node.SummaryModel {
			return full, nil
		}
	}
	return nil, nil
}

// decideModel reports whether m's summary goes into its node: it holds
// a verified reply, made from the material the node is made of
// (matching), and the policy lets an executor write (its text becomes
// the vault's as an executor.delegated result would). Otherwise it
// returns the call with the reason the node falls back.
func decideModel(tx *vault.Tx, m *Model, matching bool) (bool, executor.Summary, error) {
	call := m.Call
	switch {
	case call.Err != nil:
	case !m.ok():
		call.Code, call.Err = executor.CodeStale, fmt.Errorf("summarise: a model's summary of the same material was expected and is gone")
	case !matching:
		call.Code, call.Err = executor.CodeStale, fmt.Errorf("summarise: the material changed while executor %s wrote its summary", call.Executor.Name)
	default:
		pol, err := tx.Policy()
		if err != nil {
			return false, call, err
		}
		rule, ok := pol.Allows(vault.KindDelegation, vault.SourceExecutor)
		if ok {
			return true, call, nil
		}
		call.Code, call.Err = executor.CodePolicy, fmt.Errorf("summarise: the policy refuses an executor's text (%s from %s; it allows %s)",
			vault.KindDelegation, vault.SourceExecutor, strings.Join(rule.Sources, ", "))
	}
	return false, call, nil
}

// applyModel decides the summary of n (decideModel) and marks it: the
// model's, with the node's summary fields and the reply first in its
// body; or the deterministic one, with the reason in the node and an
// executor.failed event (what names the summary). m nil: nothing changes
// (no summariser).
func applyModel(tx *vault.Tx, n *node.Node, m *Model, matching bool, what string) error {
	if m == nil {
		return nil
	}
	use, call, err := decideModel(tx, m, matching)
	if err != nil {
		return err
	}
	if use {
		markModel(n, m)
		return nil
	}
	markFallback(tx, n, call, what)
	return nil
}

// markModel makes n hold m's summary: the fields, and the reply as the
// body's first section, the deterministic material after it.
func markModel(n *node.Node, m *Model) {
	call := m.Call
	n.Summary, n.SummaryBy, n.SummaryChecksum = node.SummaryModel, call.Executor.Name, call.Response.Checksum
	note := fmt.Sprintf("_Written by executor `%s` (checksum %s…); the deterministic summary follows._",
		call.Executor.Name, call.Response.Checksum[:12])
	n.Body = withSection(n.Body, "## Summary\n\n"+note+"\n\n"+m.Text+"\n\n")
}

// markFallback makes n say its summary is the deterministic one and why,
// and records the failure as an executor.failed event when the policy
// lets it be written (when it does not, the violation is recorded and
// the node alone says why).
func markFallback(tx *vault.Tx, n *node.Node, call executor.Summary, what string) {
	reason := "summary failed"
	if call.Err != nil {
		reason = call.Err.Error()
	}
	if call.Code != "" && !strings.HasPrefix(reason, call.Code+":") {
		reason = call.Code + ": " + reason
	}
	reason = vault.Clip(vault.OneLine(reason), 300)
	n.Summary, n.SummaryFallback = node.SummaryDeterministic, reason
	n.Body = withSection(n.Body, "_Deterministic summary: the model's was not used ("+reason+")._\n\n")
	thread := ""
	if len(n.Threads) > 0 {
		thread = n.Threads[0]
	}
	call.Err = fmt.Errorf("%s", reason)
	ev := executor.SummaryFailedEvent(what, thread, call)
	ev.Session = n.Session
	if tx.Permit(ev) == nil {
		tx.Append(ev)
	}
}

// withSection puts text after body's first line (its title) and the
// blank line after it.
func withSection(body, text string) string {
	title, rest, ok := strings.Cut(body, "\n")
	if !ok {
		return body + "\n\n" + text
	}
	return title + "\n\n" + text + strings.TrimLeft(rest, "\n")
}

// CondenseModels asks [summarise]'s executor, outside any lock, for the
// summary of each condensed node Condense would write now for agent (one
// call per period, in order), by period label: nil when no executor is
// named. A group's material is its nodes' titles and bodies, each body
// clipped.
func CondenseModels(ctx context.Context, v *vault.Vault, agent string, opts CondenseOptions, now time.Time, mopts ModelOptions) (map[string]*Model, error) {
	cfg, failed := summariser(v)
	if failed == nil {
		return nil, nil
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	ix, err := node.Load(v.Files())
	if err != nil {
		return nil, err
	}
	labels, groups := condenseGroups(ix, agent, opts, now)
	out := map[string]*Model{}
	for _, label := range labels {
		m := &Model{Call: failed.Call}
		var lines []string
		for _, c := range groups[label] {
			m.Children = append(m.Children, c.ID)
			body := ""
			if full, err := node.Read(v.Files(), c); err == nil {
				body = vault.Clip(strings.TrimSpace(full.Body), childRunes)
			}
			lines = append(lines, fmt.Sprintf("### %s %s: %s\n\n%s\n", c.Kind, c.ID, c.Title, body))
		}
		if m.Call.Err == nil {
			prompt := fmt.Sprintf("Condense these summaries of a coding agent's work over %s (%s) into one, for its long-term memory: "+
				"the work done, the decisions, and what is still open. At most 250 words of markdown; answer with the summary alone.\n\n%s",
				label, opts.Period, bounded(lines, materialBytes))
			m = ask(ctx, v, cfg, m, "condense:"+label, prompt, mopts)
		}
		out[label] = m
	}
	return out, nil
}
