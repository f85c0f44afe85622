package lineage

// Control lines: the lines of an assistant's reply that ask memvault to
// record something (docs/LINEAGE.md, "Control lines"). The Stop hook and
// the session summary extract them, once each, through the same verbs as
// the command line (decideEvent, learnEvent, nextEvent, doneEvent), so a
// reply line and a CLI verb make the same row.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync"

	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/transcript"

	"github.com/memvault/memvault/vault"
)

// ControlLine is a line of an assistant message that asks memvault to record
// something: "DECISION: use WAL", "CLOSE: e_…", "THREAD: project:shop".
type ControlLine struct {
	Verb string `json:"verb"`
	Arg  string `json:"arg"`
	Msg  string `json:"msg"`  // id of the message it came from
	N    int    `json:"n"`    // sequence number of that message
	Line int    `json:"line"` // 1-based line within the message
	// Reply names the line by its reply's words and its own (replySum):
	// the same reply can reach a session twice, once from the hook's
	// payload when the harness had not written it to its transcript yet,
	// and once from the transcript, under another id.
	Reply  string `json:"-"`
	Event  string `json:"event,omitempty"`
	Result string `json:"result,omitempty"` // why no event was made
}

// controlRE matches a control line; compiled on first use, so a command
// that never distils a session does not pay for it at start.
var controlRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(?:[-*]\s+)?(COMMIT|CLOSE|DECISION|LEARNED|BLOCKER|NEXT|DONE|CLAIM|REFLECT|THREAD|CONSTRAINT):\s*(.*?)\s*$`)
})

// controlKinds maps the control verbs that record their text as it is to
// the ledger kinds they record; DECISION, LEARNED, NEXT and DONE go
// through the protocol's verbs (controlEvent).
var controlKinds = map[string]string{
	"COMMIT":  "commitment.open",
	"BLOCKER": "blocker",
	// A constraint is a person's under the default policy: the line is
	// refused, and the refusal recorded as a violation (docs/POLICY.md).
	"CONSTRAINT": "constraint",
}

// scanControlLines finds the control lines of one assistant message. Lines
// inside fenced code blocks are examples, not requests, and are skipped.
func scanControlLines(m transcript.Stored) []ControlLine {
	var out []ControlLine
	var words string
	fenced := false
	for i, line := range strings.Split(m.Text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if sm := controlRE().FindStringSubmatch(line); sm != nil && sm[2] != "" {
			if words == "" {
				words = strings.Join(strings.Fields(m.Text), " ")
			}
			out = append(out, ControlLine{Verb: sm[1], Arg: sm[2], Msg: m.ID, N: m.N, Line: i + 1,
				Reply: replySum(words, sm[1]+": "+sm[2])})
		}
	}
	return out
}

// replySum names a control line by the words of its reply, white space
// aside, and its own text: a hook's copy of a reply and the harness's own
// copy in its transcript may differ in their line endings or a trailing
// newline, never in their words. It is a digest, so a line the policy
// refused leaves no trace of its text in its violation.
func replySum(words, line string) string {
	sum := sha256.Sum256([]byte(words + "\x00" + line))
	return hex.EncodeToString(sum[:12])
}

// applyControls turns control lines into ledger events, once each: a line
// already recorded (same session, and the same message and line or the
// same reply digest, found in data.control) is reported with its event and
// not recorded again. THREAD lines set the
// thread of the lines after them and of the node.
func applyControls(tx *vault.Tx, st *vault.State, t transcript.Ref, lines []ControlLine, thread string) ([]ControlLine, string, error) {
	// A line is known by its message and place, and by its reply's words
	// and its own: the same reply stored twice under two ids (a hook's
	// copy, then the transcript's) is one reply, its lines recorded once.
	type key struct {
		msg  string
		line int
	}
	keysOf := func(msg string, line int, reply string) []key {
		ks := []key{{msg: msg, line: line}}
		if reply != "" {
			ks = append(ks, key{msg: "reply:" + reply})
		}
		return ks
	}
	done := map[key]string{}
	refused := map[key]string{} // lines the policy refused: their violation's words
	for _, r := range st.Rows {
		if r.Agent != t.Agent || r.Session != t.Session || len(r.Data) == 0 {
			continue
		}
		var d struct {
			Control *struct {
				Msg   string `json:"msg"`
				Line  int    `json:"line"`
				Reply string `json:"reply"`
			} `json:"control"`
		}
		if json.Unmarshal(r.Data, &d) == nil && d.Control != nil {
			for _, k := range keysOf(d.Control.Msg, d.Control.Line, d.Control.Reply) {
				done[k] = r.ID
				if r.Kind == vault.KindViolation {
					refused[k] = r.Text
				}
			}
		}
	}
	out := make([]ControlLine, 0, len(lines))
	for _, c := range lines {
		if c.Verb == "THREAD" {
			th, err := vault.ParseThread(strings.Fields(c.Arg + " ")[0])
			if err != nil {
				c.Result = "skipped: not a thread key"
			} else {
				thread = th.String()
				c.Result = "thread set"
			}
			out = append(out, c)
			continue
		}
		ks := keysOf(c.Msg, c.Line, c.Reply)
		if id, k, ok := firstKnown(done, ks); ok {
			c.Event, c.Result = id, ClaimNote(st.Get(id))
			if why, ok := refused[k]; ok {
				c.Event, c.Result = "", vault.RefusedByPolicy+why // its violation is no event of the line's
			}
			out = append(out, c)
			continue
		}
		ev, why := controlEvent(tx, st, c, thread)
		if ev == nil {
			c.Result = "skipped: " + why
			if strings.HasPrefix(why, vault.RefusedByPolicy) {
				c.Result = why
			}
			out = append(out, c)
			continue
		}
		ev.Agent, ev.Session = t.Agent, t.Session
		control := map[string]any{"msg": c.Msg, "n": c.N, "line": c.Line}
		if c.Reply != "" {
			control["reply"] = c.Reply
		}
		data, _ := json.Marshal(control)
		ev.Data = vault.WithData(ev.Data, "control", json.RawMessage(data))
		ev.Source = "control"
		if err := tx.Permit(ev); err != nil {
			if !vault.IsForbidden(err) {
				return nil, "", err
			}
			// Fail open: the line is refused and its violation recorded
			// (with data.control, so a later pass finds it); the other
			// lines go on.
			c.Result = vault.RefusedByPolicy + vault.Refusal(err)
			out = append(out, c)
			continue
		}
		tx.Append(ev)
		st.Add(&vault.Row{Event: ev}) // a later line of the reply sees it (a CLAIM about a CLOSE before it)
		c.Event, c.Result = ev.ID, ClaimNote(st.Get(ev.ID))
		for _, k := range ks {
			done[k] = ev.ID
		}
		out = append(out, c)
	}
	return out, thread, nil
}

// firstKnown returns the event recorded under the first of ks that has one.
func firstKnown[K comparable](done map[K]string, ks []K) (string, K, bool) {
	for _, k := range ks {
		if id, ok := done[k]; ok {
			return id, k, true
		}
	}
	var zero K
	return "", zero, false
}

// closeTargets lists the ids CLOSE lines name, and those CLAIM and REFLECT
// lines name (mentionedIDs): the rows a session's control lines need
// beyond its own.
func closeTargets(lines []ControlLine) []string {
	var ids []string
	for _, c := range lines {
		if f := strings.Fields(c.Arg); c.Verb == "CLOSE" && len(f) > 0 {
			ids = append(ids, f[0])
		}
		ids = append(ids, mentionedIDs(c)...)
	}
	return ids
}

// controlEvent builds the event a control line asks for, or says why not.
func controlEvent(tx *vault.Tx, st *vault.State, c ControlLine, thread string) (*vault.Event, string) {
	switch c.Verb {
	case "CLOSE":
		return closeLineEvent(st, c)
	case "CLAIM":
		return claimLineEvent(st, c, thread)
	case "REFLECT":
		ev, err := reflectionEvent(st, c.Arg)
		if err != nil {
			return nil, err.Error()
		}
		ev.Thread = thread
		return ev, ""
	}
	if err := vault.CheckText("text", c.Arg, false); err != nil {
		return nil, err.Error()
	}
	if kind, ok := controlKinds[c.Verb]; ok {
		return &vault.Event{Kind: kind, Thread: thread, Text: c.Arg}, ""
	}
	return protocolLineEvent(tx, c, thread)
}

// closeLineEvent closes the commitment a CLOSE line names ("CLOSE: <id>
// [note]"), in the commitment's thread, if it is open.
func closeLineEvent(st *vault.State, c ControlLine) (*vault.Event, string) {
	fields := strings.Fields(c.Arg)
	id := fields[0]
	note := strings.TrimSpace(strings.TrimPrefix(c.Arg, id))
	r := st.Get(id)
	switch {
	case r == nil:
		return nil, "no such commitment " + id
	case r.EffectiveKind() != "commitment.open":
		return nil, id + " is not a commitment"
	case r.ClosedBy != "" || !r.Current():
		return nil, id + " is already closed, retracted or superseded"
	}
	return &vault.Event{Kind: "commitment.close", Thread: r.Thread, Text: note, Links: []string{id}}, ""
}

// claimLineEvent records a CLAIM line ("CLAIM: <type>=<json>"), checked
// against the state (claims.go): a claim the state contradicts is recorded
// as rejected, with the reason.
func claimLineEvent(st *vault.State, c ControlLine, thread string) (*vault.Event, string) {
	typ, value, ok := strings.Cut(c.Arg, "=")
	if !ok || strings.TrimSpace(typ) == "" {
		return nil, "want CLAIM: <type>=<json>"
	}
	ev, err := claimEvent(st, typ, value)
	if err != nil {
		return nil, err.Error()
	}
	ev.Thread = thread
	return ev, ""
}

// controlDay is the day the protocol's verbs are given for a control line:
// none, as the event's own timestamp gives its day.
const controlDay = ""

// protocolLineEvent builds the event of a DECISION, LEARNED, NEXT or DONE
// line through the continuity protocol's verbs, as the command line does.
// An event about an earlier row (a done, a supersede, a reinforcement)
// takes that row's thread, global when it is global, as `memvault done`
// does; any other takes the line's thread.
func protocolLineEvent(tx *vault.Tx, c ControlLine, thread string) (*vault.Event, string) {
	cont, err := continuity.TxContinuity(tx, nil)
	if err != nil {
		return nil, err.Error()
	}
	var ev *vault.Event
	switch c.Verb {
	case "DECISION":
		ev, err = decisionLineEvent(cont, c.Arg)
	case "LEARNED":
		ev, err = learnedLineEvent(tx, cont, c.Arg)
	case "NEXT":
		ev = continuity.NextEvent(c.Arg, false, controlDay)
	case "DONE":
		ev, _, err = continuity.DoneEvent(cont, c.Arg, controlDay)
	default:
		return nil, "unknown control verb"
	}
	if err != nil {
		return nil, err.Error()
	}
	switch {
	case ev.Thread != "":
	case len(ev.Links) > 0:
		ev.Thread = cont.ThreadOf(ev.Links[0])
	default:
		ev.Thread = thread
	}
	return ev, ""
}

// decisionLineEvent records a DECISION line ("[scope] decision|why"),
// unless it repeats an active decision.
func decisionLineEvent(cont *continuity.Continuity, arg string) (*vault.Event, error) {
	scope, body := controlScope(arg)
	dec, why, _ := strings.Cut(body, "|")
	key := continuity.NormalizeText(dec)
	for _, d := range cont.Decisions {
		if d.Status == vault.StatusActive && d.Key() == key {
			return nil, errors.New("repeats " + d.ID)
		}
	}
	ev, _, err := continuity.DecideEvent(cont, continuity.DecideInput{Decision: dec, Rationale: why, Scope: scope}, controlDay)
	return ev, err
}

// learnedLineEvent records a LEARNED line ("[scope] error", "… error|
// prevention" or "… error|cause|prevention"). The events the protocol
// makes before the learning's own (the retraction of an archiving) are
// appended here, each through the policy: one refused refuses the line.
func learnedLineEvent(tx *vault.Tx, cont *continuity.Continuity, arg string) (*vault.Event, error) {
	scope, body := controlScope(arg)
	in := continuity.LearnInput{Scope: scope, Error: body}
	switch parts := strings.Split(body, "|"); len(parts) {
	case 1:
	case 2:
		in.Error, in.Prevention = parts[0], parts[1]
	default:
		in.Error, in.Cause, in.Prevention = parts[0], parts[1], strings.Join(parts[2:], "|")
	}
	evs, _, _, err := continuity.LearnEvent(cont, in, controlDay)
	if err != nil {
		return nil, err
	}
	for _, pre := range evs[:len(evs)-1] { // the retraction of an archiving
		pre.Thread, pre.Source = cont.ThreadOf(pre.Links[0]), "control"
		if err := tx.Permit(pre); err != nil {
			return nil, errors.New(vault.RefusedByPolicy + vault.Refusal(err))
		}
		tx.Append(pre)
	}
	return evs[len(evs)-1], nil
}

// controlScope splits a leading [scope] off a control line's text; text
// that starts with a bracket but names no scope is left as it is.
func controlScope(arg string) (scope, body string) {
	if strings.HasPrefix(arg, "[") {
		if i := strings.Index(arg, "]"); i > 0 {
			if sc, err := continuity.ParseScope(arg[1:i]); err == nil {
				return sc.String(), strings.TrimSpace(arg[i+1:])
			}
		}
	}
	return "", arg
}

// ExtractControls turns the control lines of t's assistant messages into
// ledger events, once each, without writing a node: what a hook runs after
// every turn, so a DECISION: is in the ledger before the session ends.
func ExtractControls(tx *vault.Tx, t transcript.Ref, thread string) error {
	d, err := digest(tx.Vault(), t, 1)
	if err != nil || len(d.controls) == 0 {
		return err
	}
	st, err := tx.SessionState(t, closeTargets(d.controls))
	if err != nil {
		return err
	}
	_, _, err = applyControls(tx, st, t, d.controls, thread)
	return err
}
