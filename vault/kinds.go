package vault

import (
	"maps"
	"slices"
)

// Kinds of ledger events that memvault itself writes outside the protocol
// and the heads (which name theirs in continuity.go and heads.go).
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
		KindSessionThread, KindSessionStarted, KindCodeCommit,
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
