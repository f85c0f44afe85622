package lineage

import (
	"fmt"
	"strings"
	"time"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"

	"github.com/memvault/memvault/vault/executor"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/transcript"
)

// sessionDigest is what distillation reads from a transcript, in one pass.
type sessionDigest struct {
	last     int
	prompts  []string // what the person asked, markup removed
	asked    int      // how many prompts in all
	outcome  string   // the last substantial answer
	answer   string   // the last answer, substantial or not
	lastTS   time.Time
	controls []ControlLine
	compact  *transcript.Stored // the last compaction summary the harness wrote
	work     transcript.Work    // files touched, commands run
	// tokens is render.Tokens summed over messages 1 to last, memvault's
	// injected context left out: the node's TranscriptTokens.
	tokens int
}

func digest(v *vault.Vault, t transcript.Ref, from int) (*sessionDigest, error) {
	d := &sessionDigest{}
	err := transcript.Read(v.Files(), t, from, 0, func(m transcript.Stored) error {
		d.last = m.N
		if m.Kind != transcript.KindContext {
			d.tokens += render.Tokens(m.Text)
		}
		if !m.TS.IsZero() {
			d.lastTS = m.TS
		}
		switch {
		case m.Kind == transcript.KindCompaction:
			mm := m
			d.compact = &mm
		case m.Kind != "":
			// injected context and boundaries are not the conversation
		case m.Role == transcript.RoleTool:
			d.work.Add(m.Message)
		case m.Role == transcript.RoleUser:
			d.addPrompt(m.Text)
		case m.Role == transcript.RoleAssistant && strings.TrimSpace(m.Text) != "":
			if a := answerText(m.Text); a != "" {
				d.answer = a
				if !filler(a) {
					d.outcome = a
				}
			}
			d.controls = append(d.controls, scanControlLines(m)...)
		}
		return nil
	})
	return d, err
}

// SummaryOptions tune Summarize.
type SummaryOptions struct {
	Thread string // the session's thread when no THREAD: line names one
	// Model is the executor's summary SessionModel asked for before the
	// transaction (nil: no summariser, the summary is deterministic).
	Model *Model
}

// Summarize writes the session-summary node of t (summary.go): what was
// asked, the outcome, the files touched and commands run, what the
// session recorded, and the control lines of assistant messages, each
// turned into its ledger event once. A session has one summary that
// counts: summarizing again with nothing new returns it and writes
// nothing; with something new the new node supersedes it.
func Summarize(tx *vault.Tx, t transcript.Ref, opts SummaryOptions) (*node.Node, bool, error) {
	v := tx.Vault()
	if err := t.Check(); err != nil {
		return nil, false, err
	}
	d, err := digest(v, t, 1)
	if err != nil {
		return nil, false, err
	}
	if d.last == 0 {
		return nil, false, fault.New(vault.ErrNotFound, "summarize: session %q of agent %s has no messages", t.Session, t.Agent)
	}
	st, err := tx.SessionState(t, closeTargets(d.controls))
	if err != nil {
		return nil, false, err
	}
	thread := opts.Thread
	if thread != "" {
		th, err := vault.ParseThread(thread)
		if err != nil {
			return nil, false, err
		}
		thread = th.String()
	}
	controls, thread, err := applyControls(tx, st, t, d.controls, thread)
	if err != nil {
		return nil, false, err
	}
	for _, ev := range tx.Events() { // the control lines' events are the session's too
		st.Add(&vault.Row{Event: ev})
	}
	rows, threads := sessionRows(st, t, thread)
	n := summaryNode(tx, t, d, primaryFirst(thread, threads), summaryBody(tx, t, d, rows, controls))
	if m := opts.Model; m != nil {
		// A model's summary of these messages is not asked for twice:
		// the node that holds one stands.
		prev, err := modelNode(v, tx, t, node.SessionSummary, 1, d.last)
		if err != nil || prev != nil {
			return prev, false, err
		}
		if err := applyModel(tx, n, m, m.From == 1 && m.Upto == d.last, "summary of session "+t.Session); err != nil {
			return nil, false, err
		}
	}
	return createSummary(tx, n)
}

// sessionRows returns the rows the session's agent wrote in it, nodes and
// transcript bookkeeping aside, and the threads of the summary: thread (the
// session's own, when it has one) and those of the rows.
func sessionRows(st *vault.State, t transcript.Ref, thread string) ([]*vault.Row, map[string]bool) {
	var rows []*vault.Row
	threads := map[string]bool{}
	if thread != "" {
		threads[thread] = true
	}
	for _, r := range st.Rows {
		if r.Agent == t.Agent && r.Session == t.Session && !strings.HasPrefix(r.Kind, "node.") &&
			!strings.HasPrefix(r.Kind, "transcript.") {
			rows = append(rows, r)
			if r.Thread != "" {
				threads[r.Thread] = true
			}
		}
	}
	return rows, threads
}

// primaryFirst lists the threads of m sorted, with primary (the session's
// own thread, when it has one) first: the node's node.created event carries
// the first, so the node shows in that thread head's Lineage.
func primaryFirst(primary string, m map[string]bool) []string {
	out := vault.SortedKeys(m)
	for i, t := range out {
		if t == primary && i > 0 {
			copy(out[1:i+1], out[:i])
			out[0] = primary
		}
	}
	return out
}

// CompactOptions tune Compact.
type CompactOptions struct {
	// Summary is the summary the harness wrote; "" takes the last
	// compaction summary found in the transcript.
	Summary string
	// Thread is the session's thread when no THREAD: line names one: the
	// hook's thread (MEMVAULT_THREAD, or the one worked out from the
	// working directory), or `memvault compact --thread`.
	Thread string
	// Model is the executor's summary CompactionModel asked for before the
	// transaction, used when Summary is "" (nil: no summariser); the
	// transcript's compaction summary, if any, follows it in the node.
	Model *Model
}

// Compact records a compaction as a node: the summary text the harness wrote
// (given, or else the last compaction summary found in the transcript),
// covering the messages since the previous compaction node of the session.
// The node belongs to the session's thread, so that it is listed in that
// thread head's Lineage and recall scoped to another thread leaves it out:
// the thread the session's last THREAD: line names, else opts.Thread, else
// the threads the session's rows were recorded in.
func Compact(tx *vault.Tx, t transcript.Ref, opts CompactOptions) (*node.Node, bool, error) {
	v := tx.Vault()
	if err := t.Check(); err != nil {
		return nil, false, err
	}
	ix, err := tx.Nodes()
	if err != nil {
		return nil, false, err
	}
	var prev *node.Node
	for _, n := range ix.Select(node.Filter{Agent: t.Agent, Session: t.Session, Kind: node.Compaction}) {
		if n.Span != nil && (prev == nil || n.Span.To > prev.Span.To) {
			prev = n
		}
	}
	d, err := digest(v, t, 1)
	if err != nil {
		return nil, false, err
	}
	if d.last == 0 {
		return nil, false, fault.New(vault.ErrNotFound, "compact: session %q of agent %s has no messages", t.Session, t.Agent)
	}
	from := 1
	if prev != nil {
		if prev.Span.To >= d.last {
			return prev, false, nil // no message since the last compaction node
		}
		from = prev.Span.To + 1
	}
	summary := opts.Summary
	model := opts.Model
	if strings.TrimSpace(summary) != "" {
		model = nil // the harness's own summary
	}
	useModel, call := false, executor.Summary{}
	if model != nil {
		var err error
		if useModel, call, err = decideModel(tx, model, model.From == from && model.Upto == d.last); err != nil {
			return nil, false, err
		}
	}
	if strings.TrimSpace(summary) == "" && d.compact != nil {
		summary = d.compact.Text
	}
	if strings.TrimSpace(summary) == "" && !useModel {
		e := fault.New(vault.ErrNotFound, "compact: no summary given and the transcript of session %q has no compaction summary", t.Session)
		return nil, false, e.WithHint("pass the summary with --file F or on stdin")
	}
	if summary != "" {
		if err := vault.CheckText("summary", summary, false); err != nil {
			return nil, false, err
		}
	}
	threads, err := compactionThreads(tx, t, d.controls, opts.Thread)
	if err != nil {
		return nil, false, err
	}
	summary, _ = v.Redact(summary)
	summary = transcript.StripMarkup(summary) // a harness's summary quotes its own markup
	created := d.lastTS
	if created.IsZero() {
		created = tx.Now()
	}
	title := summary
	body := strings.TrimSpace(summary)
	if useModel {
		title = model.Text
		if body == "" {
			body = "(the transcript holds no compaction summary of the harness)"
		}
	}
	n := &node.Node{Kind: node.Compaction, Agent: t.Agent, Session: t.Session, Harness: tx.Harness(),
		Threads: threads, Span: &node.Span{Path: t.Path(), From: from, To: d.last}, Created: vault.FormatTS(created),
		TranscriptTokens: &d.tokens,
		Title:            vault.Clip("compaction of "+t.Session+": "+vault.OneLine(title), 120),
		Body:             fmt.Sprintf("# Compaction of session %s\n\n%s\n", t.Session, body)}
	switch {
	case useModel:
		markModel(n, model)
	case model != nil:
		markFallback(tx, n, call, "compaction summary of session "+t.Session)
	}
	return tx.CreateNode(n)
}

// compactionThreads decides the threads of a compaction node: the thread
// the session's last valid THREAD: line names (it sets the thread of the
// lines after it, as Summarize reads it), else thread, else the threads
// the session's rows were recorded in (its session.started event binds a
// hook's session to one). A session with none of these is global.
func compactionThreads(tx *vault.Tx, t transcript.Ref, controls []ControlLine, thread string) ([]string, error) {
	for i := len(controls) - 1; i >= 0; i-- {
		if c := controls[i]; c.Verb == "THREAD" {
			if th, err := vault.ParseThread(strings.Fields(c.Arg + " ")[0]); err == nil {
				return []string{th.String()}, nil
			}
		}
	}
	if thread != "" {
		th, err := vault.ParseThread(thread)
		if err != nil {
			return nil, err
		}
		return []string{th.String()}, nil
	}
	st, err := tx.SessionState(t, nil)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, r := range st.Rows {
		if r.Agent == t.Agent && r.Session == t.Session && r.Thread != "" && !strings.HasPrefix(r.Kind, "head.") {
			seen[r.Thread] = true
		}
	}
	return vault.SortedKeys(seen), nil
}
