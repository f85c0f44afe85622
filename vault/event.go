package vault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault/canonical"
)

// Event is one line of the ledger. The field set is open: a line may carry
// keys this version does not know, and verification still holds because the
// hash is computed over every key present (see canonicalJSON).
type Event struct {
	ID      string          `json:"id"`
	TS      string          `json:"ts"`
	Agent   string          `json:"agent"`
	Session string          `json:"session,omitempty"`
	Harness string          `json:"harness,omitempty"`
	Kind    string          `json:"kind"`
	Thread  string          `json:"thread,omitempty"`
	Text    string          `json:"text"`
	Data    json.RawMessage `json:"data,omitempty"`
	Links   []string        `json:"links,omitempty"`
	Source  string          `json:"source,omitempty"`
	Prev    string          `json:"prev"`
	Hash    string          `json:"hash"`
}

// tsLayout is the ledger's timestamp form: UTC, milliseconds, a literal Z,
// so that timestamps sort as strings.
const tsLayout = "2006-01-02T15:04:05.000Z"

// FormatTS renders t in the ledger's timestamp form.
func FormatTS(t time.Time) string { return t.UTC().Format(tsLayout) }

// Time parses the event's timestamp; a malformed one yields the zero time.
func (e *Event) Time() time.Time {
	t, err := time.Parse(time.RFC3339Nano, e.TS)
	if err != nil {
		return time.Time{}
	}
	return t
}

// object returns the event as a generic JSON object, the form the canonical
// encoder and the hash work on.
func (e *Event) object() (map[string]any, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	v, err := canonical.Decode(raw)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// Seal sets e.Prev to prev and computes e.Hash, returning the canonical line
// (with its newline) that goes into the ledger.
func (e *Event) Seal(prev string) ([]byte, error) {
	e.Prev = prev
	e.Hash = ""
	obj, err := e.object()
	if err != nil {
		return nil, err
	}
	delete(obj, "hash")
	h, err := canonical.Hash(obj)
	if err != nil {
		return nil, err
	}
	e.Hash = h
	obj["hash"] = h
	var buf bytes.Buffer
	if err := canonical.Write(&buf, obj); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// ParseLine decodes one ledger line and checks its hash. It returns the event
// even when the hash is wrong, so that verification can report both the
// problem and what the line claims to be.
func ParseLine(line []byte) (ev *Event, hashOK bool, err error) {
	if ev, ok, fast := fastParseLine(line); fast {
		return ev, ok, nil
	}
	return parseLineGeneral(line)
}

// parseLineGeneral is parseLine for any line: decoded into a map and
// encoded again in canonical form to be hashed.
func parseLineGeneral(line []byte) (ev *Event, hashOK bool, err error) {
	v, err := canonical.Decode(line)
	if err != nil {
		return nil, false, fmt.Errorf("not valid json: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, false, fmt.Errorf("not a json object")
	}
	ev = new(Event)
	if err := json.Unmarshal(line, ev); err != nil {
		return nil, false, fmt.Errorf("field of the wrong type: %v", err)
	}
	stored, _ := obj["hash"].(string)
	delete(obj, "hash")
	h, err := canonical.Hash(obj)
	if err != nil {
		return ev, false, err
	}
	return ev, stored != "" && h == stored, nil
}

// redactData redacts every string (keys included) in the JSON value data.
// It returns data unchanged when there was nothing to redact, or when data
// does not decode (the event's validation reports that).
func (v *Vault) redactData(data json.RawMessage) (json.RawMessage, map[string]int) {
	if len(data) == 0 {
		return data, nil
	}
	val, err := canonical.Decode(data)
	if err != nil {
		return data, nil
	}
	total := map[string]int{}
	var walk func(any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case string:
			s, counts := v.Redact(x)
			for k, n := range counts {
				total[k] += n
			}
			return s
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
			return x
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[walk(k).(string)] = walk(e)
			}
			return out
		}
		return x
	}
	val = walk(val)
	if len(total) == 0 {
		return data, nil
	}
	var buf bytes.Buffer
	if canonical.Write(&buf, val) != nil {
		return data, nil
	}
	return buf.Bytes(), total
}

// WithData returns the JSON object data with key set to value.
func WithData(data json.RawMessage, key string, value any) json.RawMessage {
	obj := map[string]any{}
	if len(data) > 0 {
		if v, err := canonical.Decode(data); err == nil {
			if m, ok := v.(map[string]any); ok {
				obj = m
			}
		}
	}
	raw, _ := json.Marshal(value)
	v, _ := canonical.Decode(raw)
	obj[key] = v
	var buf bytes.Buffer
	if canonical.Write(&buf, obj) != nil {
		return data
	}
	return buf.Bytes()
}

// JSONUnmarshal is json.Unmarshal that refuses empty data.
func JSONUnmarshal(data []byte, v any) error {
	if len(data) == 0 {
		return fmt.Errorf("no data")
	}
	return json.Unmarshal(data, v)
}

// Kinds of ledger events that memvault itself writes outside the protocol
// and the heads (whose kinds follow).
const (
	KindCommitmentOpen     = "commitment.open"
	KindCommitmentClose    = "commitment.close"
	KindRetract            = "retract"
	KindSupersede          = "supersede"
	KindTranscriptImported = "transcript.imported"
	KindTranscriptRedacted = "transcript.redacted"
	KindNodeCreated        = "node.created"
	KindSessionThread      = "session.thread"
	KindSessionStarted     = "session.started"
	KindCodeCommit         = "code.commit"
	// KindPolicy states, per event kind, which sources may write it
	// (`memvault policy set`; docs/POLICY.md); KindViolation records a
	// write the policy refused. Only the policy check writes a violation.
	KindPolicy    = "policy"
	KindViolation = "violation"
	// KindExportImported records an import of another vault's export
	// (`memvault import`; docs/EXPORT.md): its manifest hash and the
	// source's tip.
	KindExportImported = "export.imported"
	// KindDelegation records an executor's verified result, and
	// KindDelegationFailed a task every try of which failed (`memvault
	// delegate`, vault/executor; docs/EXECUTORS.md).
	KindDelegation       = "executor.delegated"
	KindDelegationFailed = "executor.failed"
	// KindRepaired records what `memvault repair` did to the ledger
	// (vault/repair).
	KindRepaired = "ledger.repaired"
)

// LedgerKinds lists, sorted, every kind of event memvault writes or reads
// as another (the legacy protocol kinds): the values `ledger --kind`
// knows without looking at a vault. The set of kinds stays open (verify
// accepts any kind), so a filter also accepts a kind a vault holds that
// this list lacks; TestLedgerKindsMatchAPIDoc holds the list to the kind
// tables of docs/API.md.
func LedgerKinds() []string {
	kinds := slices.Clone(RememberKinds)
	kinds = append(kinds,
		KindCommitmentOpen, KindCommitmentClose, KindRetract, KindSupersede,
		KindTranscriptImported, KindTranscriptRedacted, KindNodeCreated,
		KindSessionThread, KindSessionStarted, KindCodeCommit, KindPolicy, KindViolation, KindExportImported, KindDelegation, KindDelegationFailed,
		KindJoin, KindRepaired, KindDone,
		KindHeadRendered, KindHeadDeferred, KindHeadConflict, KindHeadResolved, KindHeadEdited, KindHeadTakeover,
		KindContinuityGoal, KindContinuitySession, KindContinuityAudited, KindContinuityRotated,
		KindLearningReinforce, KindLearningArchived, KindLearningInvalid, KindLearningCorrected, KindLearningMeta,
		KindDecisionSuperseed)
	kinds = append(kinds, slices.Collect(maps.Keys(legacyKinds))...)
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// KnownKinds is LedgerKinds with the kinds this state's rows hold: what a
// kind filter over this vault accepts.
func (st *State) KnownKinds() []string {
	kinds := LedgerKinds()
	for k := range st.KindCounts() {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// CondensePeriods are the periods Condense groups nodes by, the first the
// default.
var CondensePeriods = []string{"day", "week"}

// RefreshEvents are the harness events a head refresh runs on (`memvault
// refresh --on`).
var RefreshEvents = []string{"session-end", "compaction"}

// Event kinds of the continuity protocol. Each is documented in docs/API.md.
const (
	KindContinuityGoal    = "continuity.goal"    // text: the active goal; data.phase
	KindContinuityNext    = "continuity.next"    // text: a next action; data.first puts it on top
	KindContinuityDone    = "continuity.done"    // text: an accomplishment; links: the next action it completes
	KindContinuitySession = "continuity.session" // a session ended; data.context, data.files; counts iterations
	KindContinuityAudited = "continuity.audited" // an audit's outcome: data.now and the flags it raised
	KindContinuityRotated = "continuity.rotated" // hand-written lines moved out of CONTINUITY.md to keep its cap
	KindLearningRecorded  = "learning.recorded"
	KindLearningReinforce = "learning.reinforced"
	KindLearningArchived  = "learning.archived"
	KindLearningInvalid   = "learning.invalidated"
	KindLearningCorrected = "learning.corrected"
	KindLearningMeta      = "learning.meta"
	KindDecisionRecorded  = "decision.recorded"
	KindDecisionSuperseed = "decision.superseded"
)

// KindDone records something done; links[0], when present, is the next
// action or commitment it closes.
const KindDone = "done"

// Statuses of rows, learnings and decisions (Row status: State.Status).
const (
	StatusActive      = "active"
	StatusArchived    = "archived"
	StatusInvalidated = "invalidated"
	StatusCorrected   = "corrected"
	StatusSuperseded  = "superseded"
	StatusRetracted   = "retracted"
	StatusClosed      = "closed"
)

// Head paths that are not threads.
const (
	MemoryHead     = render.MemoryPath
	ContinuityHead = "CONTINUITY.md"
	RenderedDir    = ".rendered"
)

// Head kinds of ledger events.
const (
	KindHeadRendered = "head.rendered"
	KindHeadDeferred = "head.deferred"
	KindHeadConflict = "head.conflict"
	KindHeadResolved = "head.resolved"
	KindHeadEdited   = "head.edited"
	KindHeadTakeover = "head.takeover"
)
