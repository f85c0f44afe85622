package vault

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/transcript"
)

// What a transaction tells the features built on the engine, and what it
// keeps for them: they read the transaction's clock, writer and queued
// events, fold the ledger through it, and keep per-transaction state in its
// slots, but never reach its fields (docs/ARCHITECTURE.md, "How the engine
// carries its features").

// Now is the transaction's clock: every event in it carries this time.
func (tx *Tx) Now() time.Time { return tx.now }

// Agent is the agent the transaction writes as.
func (tx *Tx) Agent() string { return tx.opts.Agent }

// Subject sets the commit subject for a transaction that records no content
// event: a decision, a learning or any other content the transaction
// records names the commit instead ("decision: use WAL for the index (+2
// more)"), so that a caller's generic subject never hides it (commitmsg.go).
func (tx *Tx) Subject(s string) { tx.subject = s }

// Events returns the events queued so far in this transaction, in order:
// a caller that commits only when something was recorded asks it.
func (tx *Tx) Events() []*Event { return tx.events }

// State returns the folded ledger, including events appended so far in this
// transaction. It is loaded on first use, so transactions that need no
// lookups never read the history.
func (tx *Tx) State() (*State, error) {
	if tx.state == nil {
		st, err := tx.v.LoadState()
		if err != nil {
			return nil, err
		}
		for _, ev := range tx.events {
			st.Add(&Row{Event: ev})
		}
		tx.state = st
	}
	return tx.state, nil
}

// SessionState returns the rows of session t (and, whatever their session,
// the rows named in ids, the targets of CLOSE lines), with every
// correction, and the events appended so far in this transaction. It reads
// only the ledger lines that mention them, so a session's summary or its
// control lines cost the size of the session, not of the ledger.
func (tx *Tx) SessionState(t transcript.Ref, ids []string) (*State, error) {
	if tx.state != nil {
		return tx.state, nil
	}
	field, _ := json.Marshal(t.Session)
	needles := [][]byte{append([]byte(`"session":`), field...)}
	for _, id := range ids {
		needles = append(needles, []byte(`"`+id+`"`))
	}
	// The rows CLOSE lines name may be anywhere; without any, only the
	// segments that name the session are read.
	var keep func(SegCorrections) bool
	if len(ids) == 0 {
		keep = func(c SegCorrections) bool { return slices.Contains(c.Sessions, t.Session) }
	}
	st, err := tx.v.LoadStateOf(needles, keep)
	if err != nil {
		return nil, err
	}
	for _, ev := range tx.events {
		st.Add(&Row{Event: ev})
	}
	return st, nil
}

// Nodes returns the node index, including nodes created in this transaction.
func (tx *Tx) Nodes() (*node.Index, error) {
	if tx.nodeIndex == nil {
		ix, err := node.Load(tx.v.Files())
		if err != nil {
			return nil, err
		}
		tx.nodeIndex = ix
	}
	return tx.nodeIndex, nil
}

// Vault is the vault the transaction writes to.
func (tx *Tx) Vault() *Vault { return tx.v }

// Harness is the harness the transaction writes for ("" for a person).
func (tx *Tx) Harness() string { return tx.opts.Harness }

// OnCommitted runs fn once the transaction's commit has landed, still under
// the lock: state kept beside the vault that must change only once the
// commit holds what it describes.
func (tx *Tx) OnCommitted(fn func()) { tx.committed = append(tx.committed, fn) }

// TranscriptEnd is where this transaction's appends to t end: the last part
// it wrote and the size that part will have. ok is false when it appended
// nothing to t.
func (tx *Tx) TranscriptEnd(t transcript.Ref) (end transcript.Pos, ok bool) {
	tt := tx.transcripts[t]
	if tt == nil {
		return transcript.Pos{}, false
	}
	return transcript.Pos{Part: tt.Part, Off: tt.Size + int64(tx.pendingAppend(TranscriptRel(t, tt.Part)))}, true
}

// Slot returns what this transaction keeps under key, made by init on the
// first call: a feature built on the engine keeps its per-transaction state
// here (a fold it brings up to date with Events as they come) under a key
// of an unexported type of its own, which no other package can name.
func (tx *Tx) Slot(key any, init func() any) any {
	if v, ok := tx.slots[key]; ok {
		return v
	}
	if tx.slots == nil {
		tx.slots = map[any]any{}
	}
	v := init()
	tx.slots[key] = v
	return v
}

// Command is what the transaction's holder said it is doing (TxOptions).
func (tx *Tx) Command() string { return tx.opts.Command }

// Source is the front end the transaction writes for: the source of the
// events a verb makes without naming one ("cli" unless TxOptions say).
func (tx *Tx) Source() string {
	if tx.opts.Source == "" {
		return "cli"
	}
	return tx.opts.Source
}
