package vault

import (
	"maps"
	"slices"

	"github.com/memvault/memvault/render"
)

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
