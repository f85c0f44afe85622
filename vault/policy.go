package vault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/memvault/memvault/vault/canonical"
	"github.com/memvault/memvault/vault/codec"
	"github.com/memvault/memvault/vault/fault"
)

// The policy (docs/POLICY.md): which sources may write which kinds of
// event. It is itself a set of events: each `policy` event sets the rules
// of the kinds it names, the latest rule of a kind wins (by time, then
// id, so every clone agrees), and a kind no rule names may be written
// from anywhere. The transaction checks every event it is about to seal
// against the policy in effect before it began (policytx.go), so no front
// end, flag or verb writes around it.

// The sources a rule may name: the front ends and paths that write events.
const (
	SourceCLI      = "cli"      // a person at the command line (and the web view's --write)
	SourceEdit     = "edit"     // a person's hand edit of a head
	SourceHook     = "hook"     // a harness hook's own bookkeeping
	SourceControl  = "control"  // a control line of an agent's reply
	SourceMCP      = "mcp"      // a tool call of an agent over MCP
	SourceExecutor = "executor" // an external executor (DESIGN §10)
	SourceRefresh  = "refresh"  // a head refresh
	// SourcePolicy is the source of the violation events the policy check
	// writes; no rule may name it.
	SourcePolicy = "policy"
	// SourceAny, alone in a rule, lifts the kind's restriction.
	SourceAny = "any"
)

// PolicySources lists, sorted, the sources a rule may name.
func PolicySources() []string {
	return []string{SourceCLI, SourceControl, SourceEdit, SourceExecutor, SourceHook, SourceMCP, SourceRefresh}
}

// agentSource reports whether source is a path an agent's own text
// drives: such a source never writes memvault's bookkeeping or the policy,
// whatever a rule says.
func agentSource(source string) bool {
	return source == SourceControl || source == SourceMCP || source == SourceExecutor
}

// systemKinds are memvault's own bookkeeping: written only by memvault's
// own paths (a refresh, an import, a merge, the hooks' runtime, the policy
// check), never from an agent's path, and never named by a rule, so no
// policy grants them to an agent or takes them away from memvault.
var systemKinds = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, k := range []string{KindNodeCreated, KindSessionThread, KindSessionStarted,
		KindTranscriptImported, KindTranscriptRedacted, "transcript.sealed", KindCodeCommit,
		KindJoin, KindRepaired, KindViolation} {
		m[k] = true
	}
	return m
})

// IsSystemKind reports whether kind is one of memvault's bookkeeping
// kinds (head.* included) that no policy rule may name.
func IsSystemKind(kind string) bool {
	return systemKinds()[kind] || strings.HasPrefix(kind, "head.")
}

// SystemKinds lists the system kinds, sorted; `head.*` stands for every
// head kind.
func SystemKinds() []string {
	ks := slices.Sorted(maps.Keys(systemKinds()))
	return append([]string{"head.*"}, ks...)
}

// PolicyRule is the rule in effect for one kind.
type PolicyRule struct {
	Kind    string   `json:"kind"`
	Sources []string `json:"sources"`        // who may write it, sorted; ["any"]: anyone
	From    string   `json:"from"`           // "default", "system", or the id of the policy event that set it
	TS      string   `json:"ts,omitempty"`   // when that event was written
	Note    string   `json:"note,omitempty"` // why the rule holds beyond what it says
}

// Open reports whether the rule lets every source write its kind.
func (r PolicyRule) Open() bool { return len(r.Sources) == 1 && r.Sources[0] == SourceAny }

// describe is who the rule lets write its kind, in a few words: "only
// cli, edit may write it (the default policy)".
func (r PolicyRule) describe() string {
	if r.From == "system" {
		return "memvault alone writes it (a system kind)"
	}
	who := "only " + strings.Join(r.Sources, ", ") + " may write it"
	switch {
	case len(r.Sources) == 0:
		who = "no source may write it"
	case r.Open():
		who = "any source may write it"
	}
	if r.Kind == KindPolicy {
		who += ", never control, mcp or executor"
	}
	if r.From == "default" {
		return who + " (the default policy)"
	}
	return who + " (policy " + r.From + ")"
}

// PolicyNote names a policy event, or a rule of one, that does not count,
// and why.
type PolicyNote struct {
	ID     string `json:"id"`
	TS     string `json:"ts"`
	Reason string `json:"reason"`
}

// Policy is the policy in effect: the rules, the events that set them,
// and those that were ignored.
type Policy struct {
	Rules   map[string]PolicyRule `json:"-"`
	Ignored []PolicyNote          `json:"ignored"`
	Events  int                   `json:"events"` // policy events in the ledger
	// last is the (ts, id) of the latest policy event folded: one older
	// than it, appended later (a merge), makes the view rebuild in order.
	lastTS, lastID string
}

// DefaultRules is the policy of a vault whose ledger states none, and
// what init records: a constraint is a person's (the command line or a
// hand edit), never an agent's; the policy is changed only at the command
// line.
func DefaultRules() map[string][]string {
	return map[string][]string{
		"constraint": {SourceCLI, SourceEdit},
		KindPolicy:   {SourceCLI},
	}
}

// DefaultPolicy returns the policy before any policy event.
func DefaultPolicy() *Policy {
	p := &Policy{Rules: map[string]PolicyRule{}}
	for k, srcs := range DefaultRules() {
		p.Rules[k] = PolicyRule{Kind: k, Sources: srcs, From: "default"}
	}
	return p
}

// Rule returns the rule for kind: a system kind's, the policy's, or an
// open one when no rule names the kind.
func (p *Policy) Rule(kind string) PolicyRule {
	if IsSystemKind(kind) {
		return PolicyRule{Kind: kind, From: "system"}
	}
	if r, ok := p.Rules[kind]; ok {
		return r
	}
	return PolicyRule{Kind: kind, Sources: []string{SourceAny}, From: "default"}
}

// Allows reports whether source may write an event of kind, with the rule
// that decides it. A system kind is written by memvault's own paths only;
// the policy kind never by an agent's path, whatever its rule says.
func (p *Policy) Allows(kind, source string) (PolicyRule, bool) {
	r := p.Rule(kind)
	switch {
	case r.From == "system":
		r.Note = "system kinds are written by memvault itself, never from control, mcp or executor"
		return r, !agentSource(source) && kind != KindViolation
	case kind == KindPolicy && agentSource(source):
		r.Note = "the policy is never written from control, mcp or executor"
		return r, false
	case r.Open():
		return r, true
	}
	return r, slices.Contains(r.Sources, source)
}

// RulesSorted returns the rules that restrict a kind or were set by an
// event, sorted by kind.
func (p *Policy) RulesSorted() []PolicyRule {
	out := make([]PolicyRule, 0, len(p.Rules))
	for _, k := range slices.Sorted(maps.Keys(p.Rules)) {
		out = append(out, p.Rules[k])
	}
	return out
}

var policyKindRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$`)
})

// CheckPolicyRule checks one rule a person states: a kind memvault lets a
// rule name and sources it knows. It returns the sources sorted and
// without repeats.
func CheckPolicyRule(kind string, sources []string) ([]string, error) {
	switch {
	case len(kind) > 64 || !policyKindRE().MatchString(kind):
		return nil, fault.New(ErrInvalid, "policy: kind %q: want lower-case words joined by dots (constraint, decision.recorded)", clip(kind))
	case IsSystemKind(kind):
		e := fault.New(ErrInvalid, "policy: %s is a system kind: memvault alone writes it, and no rule may name it", kind)
		return nil, e.WithHint("docs/POLICY.md lists the system kinds")
	}
	out := []string{}
	for _, s := range sources {
		s = strings.TrimSpace(s)
		switch {
		case s == SourceAny && len(sources) == 1:
		case s == SourceAny:
			return nil, fault.New(ErrInvalid, "policy: %s: \"any\" stands alone", kind)
		case !slices.Contains(PolicySources(), s):
			e := fault.New(ErrInvalid, "policy: %s: unknown source %q", kind, clip(s))
			return nil, e.WithHint("sources are: %s, or any (or none)", strings.Join(PolicySources(), ", "))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	if kind == KindPolicy {
		if slices.ContainsFunc(out, agentSource) || slices.Contains(out, SourceAny) {
			return nil, fault.New(ErrInvalid, "policy: the policy itself is never written from control, mcp or executor")
		}
		if !slices.Contains(out, SourceCLI) {
			e := fault.New(ErrInvalid, "policy: a rule for policy that leaves out cli locks the command line out of the policy")
			return nil, e.WithHint("keep cli: memvault policy set policy cli")
		}
	}
	return out, nil
}

// clip shortens a hostile argument for a message.
func clip(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// policyData is the data of a policy event: the rules it sets, each a
// kind and the sorted sources that may write it (["any"] lifts the kind's
// restriction; [] lets no source write it).
type policyData struct {
	Rules map[string][]string `json:"rules"`
}

// PolicyEvent builds the event that sets rules (checked with
// CheckPolicyRule by the caller).
func PolicyEvent(rules map[string][]string) *Event {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(rules)) {
		who := strings.Join(rules[k], ", ")
		if len(rules[k]) == 0 {
			who = "none"
		}
		parts = append(parts, k+": "+who)
	}
	data, _ := json.Marshal(policyData{Rules: rules})
	var buf bytes.Buffer
	v, _ := canonical.Decode(data)
	_ = canonical.Write(&buf, v)
	return &Event{Kind: KindPolicy, Text: "policy: " + strings.Join(parts, "; "), Data: buf.Bytes()}
}

// fold applies one policy event (other kinds are not the policy's). An
// event of a bad shape, or from a source the policy in effect does not
// let write the policy, is ignored whole; a rule that names a system kind,
// or grants the policy to an agent's path, is ignored alone. Each is kept
// as a note for `policy show`.
func (p *Policy) fold(ev *Event) {
	if ev.Kind != KindPolicy {
		return
	}
	p.Events++
	p.lastTS, p.lastID = ev.TS, ev.ID
	ignore := func(format string, args ...any) {
		p.Ignored = append(p.Ignored, PolicyNote{ID: ev.ID, TS: ev.TS, Reason: fmt.Sprintf(format, args...)})
	}
	if _, ok := p.Allows(KindPolicy, ev.Source); !ok {
		ignore("written from %q, which may not write the policy", ev.Source)
		return
	}
	var raw struct {
		Rules map[string]json.RawMessage `json:"rules"`
	}
	if len(ev.Data) == 0 || json.Unmarshal(ev.Data, &raw) != nil || len(raw.Rules) == 0 {
		ignore("data is not {\"rules\": {KIND: [SOURCE, …]}}")
		return
	}
	rules := map[string][]string{}
	for _, k := range slices.Sorted(maps.Keys(raw.Rules)) {
		var srcs []string
		if json.Unmarshal(raw.Rules[k], &srcs) != nil || srcs == nil {
			ignore("rule %s: not a list of sources", clip(k))
			return
		}
		rules[k] = srcs
	}
	for _, k := range slices.Sorted(maps.Keys(rules)) {
		srcs, err := CheckPolicyRule(k, rules[k])
		if err != nil {
			ignore("rule ignored: %s", strings.TrimPrefix(err.Error(), "policy: "))
			continue
		}
		p.Rules[k] = PolicyRule{Kind: k, Sources: srcs, From: ev.ID, TS: ev.TS}
	}
}

// before reports whether event a (ts, id) sorts before b: the order the
// policy's events take effect in, the same on every clone.
func before(aTS, aID, bTS, bID string) bool {
	if aTS != bTS {
		return aTS < bTS
	}
	return aID < bID
}

// PolicyView is the policy folded from the ledger, kept under .state/:
// a transaction that records content loads it (a stat of each segment and
// the lines appended since), so the check costs little on a hook's path.
var PolicyView = &Derived[*Policy]{
	Name:    "policy",
	Version: 1,
	// Every event appended since the file was written is decoded from its
	// line before the fold skips it (about 1.6 µs each): at 1,024 a
	// write decoded up to a thousand (2 ms), at 64 at most 64 (0.1 ms),
	// for a rewrite of the file every 64 content writes.
	Every: 64,
	Rebuild: func(v *Vault, segs []Segment, stamps []SegStamp) (*Policy, string, bool, error) {
		return v.policyFromLedger(segs, stamps)
	},
	Fold: func(p *Policy, ev *Event) (*Policy, bool) {
		if ev.Kind != KindPolicy {
			return p, true
		}
		if p.lastID != "" && before(ev.TS, ev.ID, p.lastTS, p.lastID) {
			return p, false // an older policy event after a newer one: fold in order
		}
		p.fold(ev)
		return p, true
	},
	Encode: encodePolicy,
	Decode: decodePolicy,
}

// LoadPolicy returns the policy in effect, through its view.
func (v *Vault) LoadPolicy() (*Policy, error) {
	p, _, err := PolicyView.Load(v)
	return p, err
}

// policyNeedle finds a policy event's line: the ledger's lines are
// canonical, so the kind is written exactly so.
var policyNeedle = []byte(`"kind":"policy"`)

// policyFromLedger folds every policy event of the ledger, in (ts, id)
// order, on top of the default policy.
func (v *Vault) policyFromLedger(segs []Segment, stamps []SegStamp) (*Policy, string, bool, error) {
	evs, err := v.eventsWith(segs, policyNeedle, KindPolicy)
	if err != nil {
		return nil, "", false, err
	}
	p := FoldPolicy(evs)
	tip := v.TipOf(segs)
	torn := len(segs) > 0 && EndsTorn(v.Files(), v.SegPath(segs[len(segs)-1]), stamps[len(stamps)-1].Size)
	return p, tip, torn, nil
}

// byTime orders events by (ts, id), the order the policy's events take
// effect in on every clone.
func byTime(a, b *Event) int {
	switch {
	case before(a.TS, a.ID, b.TS, b.ID):
		return -1
	case before(b.TS, b.ID, a.TS, a.ID):
		return 1
	}
	return 0
}

// FoldPolicy is the policy the events hold (those of other kinds are
// skipped), folded in (ts, id) order on top of the default: the full
// fold the view is held to.
func FoldPolicy(evs []*Event) *Policy {
	evs = slices.DeleteFunc(slices.Clone(evs), func(ev *Event) bool { return ev.Kind != KindPolicy })
	slices.SortStableFunc(evs, byTime)
	p := DefaultPolicy()
	for _, ev := range evs {
		p.fold(ev)
	}
	return p
}

// eventsWith decodes the complete lines of segs that hold needle and are
// events of kind, in ledger order.
func (v *Vault) eventsWith(segs []Segment, needle []byte, kind string) ([]*Event, error) {
	var out []*Event
	for _, s := range segs {
		data, err := ReadComplete(v.Root, s.String())
		if err != nil {
			return nil, err
		}
		for len(data) > 0 {
			i := bytes.Index(data, needle)
			if i < 0 {
				break
			}
			start := bytes.LastIndexByte(data[:i], '\n') + 1
			end := bytes.IndexByte(data[i:], '\n')
			if end < 0 {
				break
			}
			line := data[start : i+end]
			data = data[i+end+1:]
			ev := new(Event)
			if json.Unmarshal(line, ev) == nil && ev.ID != "" && ev.Kind == kind {
				out = append(out, ev)
			}
		}
	}
	return out, nil
}

func encodePolicy(e *codec.Encoder, p *Policy) {
	e.Int(p.Events)
	e.Str(p.lastTS)
	e.Str(p.lastID)
	e.Int(len(p.Rules))
	for _, r := range p.RulesSorted() {
		e.Str(r.Kind)
		e.Strs(r.Sources)
		e.Str(r.From)
		e.Str(r.TS)
	}
	e.Int(len(p.Ignored))
	for _, n := range p.Ignored {
		e.Str(n.ID)
		e.Str(n.TS)
		e.Str(n.Reason)
	}
}

func decodePolicy(d *codec.Decoder) (*Policy, bool) {
	p := &Policy{Rules: map[string]PolicyRule{}}
	p.Events = d.Count()
	p.lastTS, p.lastID = d.Str(), d.Str()
	n := d.Count()
	for i := 0; i < n && !d.Failed(); i++ {
		r := PolicyRule{Kind: d.Str(), Sources: d.Strs(), From: d.Str(), TS: d.Str()}
		if r.Sources == nil {
			r.Sources = []string{}
		}
		p.Rules[r.Kind] = r
	}
	n = d.Count()
	for i := 0; i < n && !d.Failed(); i++ {
		p.Ignored = append(p.Ignored, PolicyNote{ID: d.Str(), TS: d.Str(), Reason: d.Str()})
	}
	return p, !d.Failed()
}
