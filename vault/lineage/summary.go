package lineage

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/transcript"
)

// What a session summary quotes, deterministically (docs/LINEAGE.md,
// "session-summary"). A summary points into the transcript; it does not
// copy it.
const (
	askedPrompts  = 5   // prompts listed under Asked
	promptRunes   = 300 // one prompt
	outcomeRunes  = 600 // the outcome
	titleRunes    = 80  // the title, cut on a word
	filesListed   = 30
	commandsShown = 15
	commandRunes  = 160
	recordedRunes = 200
	// reflectionRunes bounds one reflection in the node's Reflections.
	reflectionRunes = 600
	// fillerWords: an answer of at most this many words that opens with
	// a filler phrase is filler; one of at most minAnswerWords is too.
	fillerWords    = 12
	minAnswerWords = 3
)

// fillerOpenings are the phrases a reply without content opens with: an
// acknowledgement, an announcement of what comes next, a greeting.
var fillerOpenings = []string{
	"sure", "ok", "okay", "got it", "alright", "all right", "will do", "on it", "working on it",
	"let me", "i'll", "i will", "i'm going to", "i am going to", "running", "checking", "looking",
	"done", "great", "thanks", "thank you", "you're welcome", "understood", "noted", "yes", "no problem",
	"certainly", "of course", "absolutely", "perfect", "hello", "hi", "hey", "goodbye", "bye",
}

// answerText is an assistant message as an outcome reads it: harness
// markup removed and its control lines left out (the rows they recorded
// are listed under Recorded).
func answerText(text string) string {
	text = transcript.StripMarkup(text)
	if !strings.Contains(text, ":") {
		return strings.TrimSpace(text)
	}
	lines := strings.Split(text, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if sm := controlRE().FindStringSubmatch(l); sm == nil || sm[2] == "" {
			kept = append(kept, l)
		}
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
}

// filler reports whether an answer (or a prompt) says nothing a summary
// should quote: at most minAnswerWords words ("Done.", "Fixed it."), or
// at most fillerWords words opening with a filler phrase ("Sure. Working
// on it.", "Let me check the tests.", "thanks").
func filler(text string) bool {
	words := strings.Fields(strings.ToLower(text))
	if len(words) <= minAnswerWords {
		return true
	}
	if len(words) > fillerWords {
		return false
	}
	s := strings.Join(words, " ")
	for _, f := range fillerOpenings {
		if rest, ok := strings.CutPrefix(s, f); ok && (rest == "" || !isWordByte(rest[0])) {
			return true
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c == '\'' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 0x80
}

// addPrompt keeps a person's prompt, markup removed: the first
// askedPrompts are listed, all are counted.
func (d *sessionDigest) addPrompt(text string) {
	p := vault.OneLine(transcript.StripMarkup(text))
	if p == "" {
		return
	}
	d.asked++
	if len(d.prompts) < askedPrompts && !slices.Contains(d.prompts, p) {
		d.prompts = append(d.prompts, p)
	}
}

// summaryTitle is the title a person recognises: the first prompt that
// asks for something (not a slash command, more than minAnswerWords
// words: not "thanks" or "go on"), else the first prompt, cut on a word;
// "session <key> (no prompt)" when there is none.
func summaryTitle(t transcript.Ref, prompts []string) string {
	for _, p := range prompts {
		if !strings.HasPrefix(p, "/") && len(strings.Fields(p)) > minAnswerWords {
			return transcript.CutWords(p, titleRunes)
		}
	}
	if len(prompts) > 0 {
		return transcript.CutWords(prompts[0], titleRunes)
	}
	return "session " + vault.Clip(t.Session, 60) + " (no prompt)"
}

// summaryNode is the session-summary node of t, spanning all of its
// messages, created at the time of its last message (the transaction's
// when none has one).
func summaryNode(tx *vault.Tx, t transcript.Ref, d *sessionDigest, threads []string, body string) *node.Node {
	created := d.lastTS
	if created.IsZero() {
		created = tx.Now()
	}
	return &node.Node{Kind: node.SessionSummary, Agent: t.Agent, Session: t.Session, Harness: tx.Harness(),
		Threads: threads, Span: &node.Span{Path: t.Path(), From: 1, To: d.last}, TranscriptTokens: &d.tokens,
		Created: vault.FormatTS(created), Title: summaryTitle(t, d.prompts), Body: body}
}

// summaryBody writes a session summary's text: what was asked, the
// outcome, the files touched, the commands run, what was recorded, the
// reflections, and the control lines that recorded nothing.
func summaryBody(tx *vault.Tx, t transcript.Ref, d *sessionDigest, rows []*vault.Row, controls []ControlLine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", summaryTitle(t, d.prompts))
	fmt.Fprintf(&b, "Session `%s` of agent `%s`", vault.Clip(t.Session, 80), t.Agent)
	if h := tx.Harness(); h != "" {
		fmt.Fprintf(&b, " (%s)", h)
	}
	fmt.Fprintf(&b, ", messages 1–%d.\n\n## Asked\n\n", d.last)
	if len(d.prompts) == 0 {
		b.WriteString("(no prompt in the transcript)\n")
	}
	for _, p := range d.prompts {
		fmt.Fprintf(&b, "- %s\n", vault.Clip(p, promptRunes))
	}
	if more := d.asked - len(d.prompts); more > 0 {
		fmt.Fprintf(&b, "- … and %d more\n", more)
	}
	b.WriteString("\n## Outcome\n\n")
	switch {
	case d.outcome != "":
		fmt.Fprintf(&b, "%s\n", vault.Clip(d.outcome, outcomeRunes))
	case d.answer != "":
		fmt.Fprintf(&b, "(no substantial answer; the last reply: %q)\n", vault.Clip(vault.OneLine(d.answer), 120))
	default:
		b.WriteString("(no answer in the transcript)\n")
	}
	writeWork(&b, &d.work)
	writeRecorded(&b, rows)
	writeReflections(&b, rows)
	writeControlLines(&b, controls)
	return b.String()
}

// writeWork lists the files the session's tools wrote and the commands
// they ran, the failed ones marked.
func writeWork(b *strings.Builder, w *transcript.Work) {
	if len(w.Files) > 0 {
		b.WriteString("\n## Files touched\n\n")
		for i, f := range w.Files {
			if i == filesListed {
				fmt.Fprintf(b, "- … and %d more\n", len(w.Files)-filesListed)
				break
			}
			fmt.Fprintf(b, "- `%s`\n", filepath.ToSlash(f))
		}
	}
	if len(w.Commands) == 0 {
		return
	}
	failed := 0
	for _, c := range w.Commands {
		if c.Failed {
			failed++
		}
	}
	fmt.Fprintf(b, "\n## Commands\n\n%d run, %d failed.\n\n", len(w.Commands), failed)
	shown := 0
	for _, c := range w.Commands {
		// The failed ones are always shown; the others up to the limit.
		if !c.Failed && shown >= commandsShown {
			continue
		}
		shown++
		line := fmt.Sprintf("- `%s`", strings.ReplaceAll(vault.Clip(vault.OneLine(c.Text), commandRunes), "`", "'"))
		if c.Failed {
			line += " failed"
			if c.Exit != 0 {
				line += fmt.Sprintf(" (exit %d)", c.Exit)
			}
		}
		b.WriteString(line + "\n")
	}
	if left := len(w.Commands) - shown; left > 0 {
		fmt.Fprintf(b, "- … and %d more\n", left)
	}
}

// recordedKind reports whether a row is memory the session recorded (a
// decision, a learning, a next action, a done, a commitment, a
// correction), not bookkeeping (session.started, head.rendered,
// continuity.session, nodes, transcripts, a policy violation).
func recordedKind(kind string) bool {
	kind = vault.CanonicalKind(kind)
	return kind != "reflection" && (slices.Contains(vault.RememberKinds, kind) || vault.CorrectionKinds[kind] ||
		kind == "commitment.open")
}

// writeRecorded lists the memory rows of the session, each with its id.
func writeRecorded(b *strings.Builder, rows []*vault.Row) {
	first := true
	for _, r := range rows {
		if !recordedKind(r.Kind) {
			continue
		}
		if first {
			b.WriteString("\n## Recorded\n\n")
			first = false
		}
		thread := ""
		if r.Thread != "" {
			thread = " (" + r.Thread + ")"
		}
		fmt.Fprintf(b, "- %s `%s`%s: %s\n", r.EffectiveKind(), r.ID, thread,
			vault.Clip(vault.OneLine(transcript.StripMarkup(r.Text)), recordedRunes))
	}
}

// writeReflections lists the session's reflections that hold in full (up
// to reflectionRunes each): what the agent noted about how the work went.
func writeReflections(b *strings.Builder, rows []*vault.Row) {
	first := true
	for _, r := range rows {
		if r.Kind != "reflection" || !r.Current() {
			continue
		}
		if first {
			b.WriteString("\n## Reflections\n\n")
			first = false
		}
		links := ""
		if len(r.Links) > 0 {
			links = " (about `" + strings.Join(r.Links, "`, `") + "`)"
		}
		fmt.Fprintf(b, "- `%s`%s: %s\n", r.ID, links, vault.Clip(vault.OneLine(r.Text), reflectionRunes))
	}
}

// writeControlLines lists the control lines that recorded nothing (skipped,
// refused by the policy) and the claims with their verdict; the others'
// rows are under Recorded.
func writeControlLines(b *strings.Builder, controls []ControlLine) {
	first := true
	for _, c := range controls {
		if c.Event != "" && c.Result == "" {
			continue
		}
		if first {
			b.WriteString("\n## Control lines\n\n")
			first = false
		}
		result := "`" + c.Event + "`"
		switch {
		case c.Event == "":
			result = c.Result
		case c.Result != "": // a claim rejected or unchecked
			result += " (" + c.Result + ")"
		}
		fmt.Fprintf(b, "- message %d: %s: %s → %s\n", c.N, c.Verb, vault.Clip(c.Arg, 200), result)
	}
}

// createSummary writes n unless the session's summary that counts is n
// already (a retry, a second session end: nothing written, that node
// returned). Otherwise n supersedes every earlier summary of the agent's
// session, and says so: the session keeps one summary that counts.
func createSummary(tx *vault.Tx, n *node.Node) (*node.Node, bool, error) {
	// The session's nodes only: a byte search of the node cache, not the
	// whole index decoded (a session end runs this).
	ix, err := node.Lookup(tx.Vault().Files(), []string{node.FieldNeedle(n.Session)}, nil)
	if err != nil {
		return nil, false, err
	}
	earlier := ix.Select(node.Filter{Agent: n.Agent, Session: n.Session, Kind: node.SessionSummary, All: true})
	var sup []string
	for _, e := range earlier {
		sup = append(sup, e.ID)
		if ix.SupersededBy(e.ID) != "" {
			continue
		}
		if same := sameSummary(tx, n, e); same != nil {
			// CreateNode finds it, and records its event if a killed
			// writer left the file without one.
			same.TranscriptTokens = n.TranscriptTokens // the same span
			return tx.CreateNode(same)
		}
	}
	if len(sup) > 0 {
		slices.Sort(sup)
		n.Supersedes = sup
		n.Body = withSection(n.Body, revisionLine(sup))
	}
	return tx.CreateNode(n)
}

// revisionLine says which summary of the session a node is.
func revisionLine(sup []string) string {
	return fmt.Sprintf("_Revision %d of this session's summary: it replaces `%s`._\n\n", len(sup)+1, strings.Join(sup, "`, `"))
}

// sameSummary returns n as e's revision of it when that has e's bytes.
func sameSummary(tx *vault.Tx, n, e *node.Node) *node.Node {
	full, err := node.Read(tx.Vault().Files(), e)
	if err != nil {
		return nil // unreadable: a new summary replaces it
	}
	c := *n
	c.ID, c.Supersedes = full.ID, full.Supersedes
	if len(full.Supersedes) > 0 {
		c.Body = withSection(c.Body, revisionLine(full.Supersedes))
	}
	if bytes.Equal(c.Encode(), full.Encode()) {
		c.ID = ""
		return &c
	}
	return nil
}
