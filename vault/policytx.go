package vault

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/memvault/memvault/vault/fault"
)

// The policy inside the transaction. finish checks every event queued
// against the policy in effect when the transaction began (an event never
// authorises itself, nor does another of the same transaction), before
// anything is written. A refused event refuses the whole transaction: its
// queued events and files are dropped, and only the violation it left is
// sealed and committed, so that the attempt is on record while nothing of
// it is. A writer that must go on with the rest of its work (a hook's
// control lines) asks Permit first, one event at a time: a forbidden event
// is then never queued, only its violation.

// policySlot is the key of what a transaction keeps of the policy.
type policySlot struct{}

type txPolicy struct {
	policy *Policy
	own    map[*Event]bool // the violations this transaction's check wrote
	// checked is the ledger's segments as the transaction's check under
	// the lock stat'ed them, when it found the ledger sound: the policy's
	// view is loaded against them instead of a stat of every segment again.
	checked []verifiedStamp
}

func (tx *Tx) policyState() *txPolicy {
	return tx.Slot(policySlot{}, func() any { return &txPolicy{own: map[*Event]bool{}} }).(*txPolicy)
}

// notePolicyStamps keeps the segments the transaction's start stat'ed,
// when its check found the ledger sound (the stamps are then the files as
// they are).
func (tx *Tx) notePolicyStamps(start txStart) {
	if len(start.problems) == 0 && len(start.stamps) > 0 {
		tx.policyState().checked = start.stamps
	}
}

// policyFromChecked loads the policy's view against the stamps the
// transaction's check took; false when there are none or the view must
// be rebuilt.
func (tx *Tx) policyFromChecked() (*Policy, bool) {
	checked := tx.policyState().checked
	if len(checked) == 0 {
		return nil, false
	}
	segs := make([]Segment, len(checked))
	stamps := make([]SegStamp, len(checked))
	for i, st := range checked {
		stamps[i] = st.SegStamp
		stamps[i].Tip = "" // the view's stamps are stats alone (stampOf)
		segs[i] = MustRel(st.Path).seg()
	}
	p, key, dirty, ok := PolicyView.LoadStamped(tx.v, segs, stamps)
	if ok && dirty {
		PolicyView.Save(tx.v, p, key)
	}
	return p, ok
}

// Policy returns the policy in effect for this transaction: the ledger's
// as it was when the transaction began (its own policy events take effect
// once it has committed).
func (tx *Tx) Policy() (*Policy, error) {
	ps := tx.policyState()
	if ps.policy == nil {
		if p, ok := tx.policyFromChecked(); ok {
			ps.policy = p
		}
	}
	if ps.policy == nil {
		p, err := tx.v.LoadPolicy()
		if err != nil {
			return nil, err
		}
		ps.policy = p
	}
	return ps.policy, nil
}

// sourceOf is the source an event is checked as: its own, or the
// transaction's when it names none (the source a verb's events get).
func (tx *Tx) sourceOf(ev *Event) string {
	if ev.Source != "" {
		return ev.Source
	}
	return tx.Source()
}

// needsPolicy reports whether deciding ev needs the policy loaded: a
// system kind is decided by its source alone, so memvault's bookkeeping
// (a refresh, an import, a session's start) costs no lookup.
func needsPolicy(ev *Event, source string) bool {
	return !IsSystemKind(ev.Kind) || agentSource(source)
}

// Permit checks ev, before it is queued, against the policy. A forbidden
// event must not be queued: its violation is, and the error (of class
// ErrForbidden) says which rule refused it. A writer that fails open (the
// hooks' control lines) records the other events of its work and reports
// this one as refused.
func (tx *Tx) Permit(ev *Event) error {
	source := tx.sourceOf(ev)
	var pol *Policy
	if needsPolicy(ev, source) {
		p, err := tx.Policy()
		if err != nil {
			return err
		}
		pol = p
	} else {
		pol = DefaultPolicy() // decided by the source; the rules do not matter
	}
	rule, ok := pol.Allows(ev.Kind, source)
	if ok {
		return nil
	}
	tx.violation(ev, source, rule)
	return forbidden(ev.Kind, source, rule)
}

// RefusedByPolicy starts the result of a control line the policy
// refused (docs/LINEAGE.md).
const RefusedByPolicy = "refused by policy: "

// refusal says why a write was refused, the same words for the same
// refusal whatever the vault's ids: the error's message, the violation's
// text and a refused control line's result.
func refusal(kind, source string, rule PolicyRule) string {
	return fmt.Sprintf("%s from %s refused: %s", kind, source, rule.describe())
}

// Refusal is the words of a refusal by the policy, without the error's
// "policy: " subject.
func Refusal(err error) string { return strings.TrimPrefix(err.Error(), "policy: ") }

// forbidden is the error of a refused write.
func forbidden(kind, source string, rule PolicyRule) error {
	e := fault.New(ErrForbidden, "policy: %s", refusal(kind, source, rule))
	if rule.From == "system" || kind == KindPolicy && agentSource(source) {
		return e.WithHint("the refusal is recorded as a violation (memvault policy show)")
	}
	return e.WithHint("the refusal is recorded as a violation (memvault policy show); a person changes the rule with: memvault policy set %s SOURCE[,SOURCE…]", kind)
}

// violation queues the record of a refused event: who (agent, session,
// harness, source), what kind, which rule, and where a control line's
// came from. The refused event's text is not kept: nothing of it is
// written.
func (tx *Tx) violation(ev *Event, source string, rule PolicyRule) *Event {
	d := map[string]any{"kind": ev.Kind, "source": source, "rule": rule}
	if tx.opts.Command != "" {
		d["command"] = tx.opts.Command
	}
	if len(ev.Data) > 0 {
		var c struct {
			Control json.RawMessage `json:"control"`
		}
		if json.Unmarshal(ev.Data, &c) == nil && len(c.Control) > 0 {
			d["control"] = c.Control
		}
	}
	data, _ := json.Marshal(d)
	v := &Event{Kind: KindViolation, Agent: ev.Agent, Session: ev.Session, Harness: ev.Harness,
		Thread: ev.Thread, Source: SourcePolicy, Data: data,
		Text: refusal(ev.Kind, source, rule)}
	tx.policyState().own[v] = true
	return tx.Append(v)
}

// checkPolicy checks every queued event but the violations the check
// wrote itself. It returns the first refusal, with the violations of
// every refused event queued.
func (tx *Tx) checkPolicy() error {
	ps := tx.policyState()
	var first error
	for _, ev := range slices.Clone(tx.events) {
		if ps.own[ev] {
			continue
		}
		source := tx.sourceOf(ev)
		pol := DefaultPolicy()
		if needsPolicy(ev, source) {
			p, err := tx.Policy()
			if err != nil {
				return err
			}
			pol = p
		}
		if rule, ok := pol.Allows(ev.Kind, source); !ok {
			tx.violation(ev, source, rule)
			if first == nil {
				first = forbidden(ev.Kind, source, rule)
			}
		}
	}
	return first
}

// keepViolations drops everything the transaction queued but the
// violations its check wrote: what a refused transaction commits.
func (tx *Tx) keepViolations() {
	own := tx.policyState().own
	tx.events = slices.DeleteFunc(tx.events, func(ev *Event) bool { return !own[ev] })
	tx.files, tx.appends, tx.commitPaths = nil, nil, nil
	tx.nodes, tx.carried, tx.committed = nil, nil, nil
	tx.transcripts = nil
	tx.subject = "violation: " + tx.events[0].Text
}

// SetPolicy records a policy event setting rules (each checked as
// CheckPolicyRule does), from the transaction's source; the check refuses
// it unless the policy in effect lets that source write the policy.
func (tx *Tx) SetPolicy(rules map[string][]string) (*Event, error) {
	if len(rules) == 0 {
		return nil, fault.New(ErrInvalid, "policy: no rule to set")
	}
	clean := map[string][]string{}
	for k, srcs := range rules {
		s, err := CheckPolicyRule(k, srcs)
		if err != nil {
			return nil, err
		}
		clean[k] = s
	}
	ev := PolicyEvent(clean)
	ev.Source = tx.Source()
	return tx.Append(ev), nil
}

// violationNeedle finds a violation's line in the canonical ledger.
var violationNeedle = []byte(`"kind":"violation"`)

// Violations returns the ledger's violation events, newest first, at most
// limit of them (all when limit is 0).
func (v *Vault) Violations(limit int) ([]*Event, error) {
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		return nil, err
	}
	// Newest segments first, so a short list reads only the last ones.
	var out []*Event
	for i := len(segs) - 1; i >= 0; i-- {
		evs, err := v.eventsWith(segs[i:i+1], violationNeedle, KindViolation)
		if err != nil {
			return nil, err
		}
		slices.Reverse(evs)
		out = append(out, evs...)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b *Event) int { return byTime(b, a) }) // newest first
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// IsForbidden reports whether err is a refusal by the policy.
func IsForbidden(err error) bool { return errors.Is(err, ErrForbidden) }
