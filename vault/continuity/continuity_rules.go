package continuity

import (
	"sort"
	"strings"
	"unicode"

	"github.com/memvault/memvault/vault"
)

// The rules of the protocol that change learnings and decisions over time.
// They are pure functions of the folded state and a date, so an audit is
// deterministic for a given --now; docs/CONTINUITY.md states them for people.

// DefaultLearningTTL is the days a learning lives unless reinforced.
const DefaultLearningTTL = 30

// lowConfidenceDays is the age past which a never-reinforced learning is
// flagged LOW_CONFIDENCE.
const lowConfidenceDays = 30

// ladderTTL is the reinforcement ladder: a pattern seen again earns a longer
// life. Reinforced twice → 60 days, three times → 90, five times → 180. It
// never shortens a ttl given when the learning was recorded.
func ladderTTL(base, reinforced int) int {
	ttl := 0
	switch {
	case reinforced >= 5:
		ttl = 180
	case reinforced >= 3:
		ttl = 90
	case reinforced >= 2:
		ttl = 60
	}
	return max(base, ttl)
}

// NormalizeText is the comparison form of an error or prevention: lower
// case; every run of characters that are not letters or digits becomes one
// space; leading and trailing space dropped. "Build FAILED: missing go.sum!"
// and "build failed — missing go sum" compare equal.
func NormalizeText(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		} else {
			space = true
		}
	}
	return b.String()
}

// learningKey is what makes two learnings the same one: the same scope and
// the same error after normalizeText. A match reinforces instead of adding
// a duplicate.
func learningKey(scope, errText string) string {
	return scope + "\x00" + NormalizeText(errText)
}

// negations turn an instruction into its opposite.
var negations = map[string]bool{
	"never": true, "not": true, "no": true, "don": true, "dont": true, "doesn": true,
	"didn": true, "isn": true, "aren": true, "cannot": true, "avoid": true, "stop": true,
	"without": true, "nor": true,
}

// filler words carry no content for comparing instructions.
var filler = map[string]bool{
	"always": true, "must": true, "should": true, "do": true, "does": true, "the": true, "a": true,
	"an": true, "to": true, "of": true, "for": true, "in": true, "on": true, "and": true, "or": true,
	"be": true, "is": true, "are": true, "it": true, "that": true, "this": true, "with": true,
	"any": true, "all": true, "every": true,
	"please": true, "make": true, "sure": true, "ensure": true, "we": true, "you": true,
}

// instruction splits a normalised instruction into its polarity and its
// content words.
func instruction(s string) (negated bool, core map[string]bool) {
	core = map[string]bool{}
	for _, w := range strings.Fields(NormalizeText(s)) {
		switch {
		case negations[w]:
			negated = !negated
		case filler[w]:
		default:
			core[w] = true
		}
	}
	return negated, core
}

// Contradicts is the conflict rule for two instructions (preventions of
// learnings, texts of decisions): one says to do what the other says not
// to. Their polarity differs (an odd number of never / not / no / don't /
// avoid / stop / without) and their content words, once filler is set
// aside, overlap by at least 60% (Jaccard) with at least two words shared.
// "Always run go mod tidy before commit" and "never run go mod tidy before
// a commit" contradict; "use WAL" and "use the rollback journal" do not: the
// rule sees only direct negations, and anything subtler is for a person
// (memvault learn --invalidate, memvault decide --supersedes).
func Contradicts(a, b string) bool {
	na, ca := instruction(a)
	nb, cb := instruction(b)
	return contradicts(na, ca, nb, cb)
}

// contradicts is Contradicts on instructions already split: the audit
// splits each prevention once, not once per pair.
func contradicts(na bool, ca map[string]bool, nb bool, cb map[string]bool) bool {
	if na == nb {
		return false
	}
	shared := 0
	for w := range ca {
		if cb[w] {
			shared++
		}
	}
	union := len(ca) + len(cb) - shared
	return shared >= 2 && union > 0 && shared*10 >= union*6
}

// AuditAction is one change an audit makes.
type AuditAction struct {
	Action string `json:"action"` // archive, invalidate, supersede, ttl
	ID     string `json:"id"`     // the learning or decision
	By     string `json:"by,omitempty"`
	Reason string `json:"reason"`
}

// AuditFlag marks a learning for the reader without changing it.
type AuditFlag struct {
	ID     string `json:"id"`
	Flag   string `json:"flag"`
	Reason string `json:"reason"`
}

// AuditReport is the outcome of an audit.
type AuditReport struct {
	Now      string        `json:"now"`
	DryRun   bool          `json:"dry_run"`
	Actions  []AuditAction `json:"actions"`
	Flags    []AuditFlag   `json:"flags"`
	Ladder   []AuditAction `json:"ladder"`   // learnings living longer than the default, and why
	Blockers []string      `json:"blockers"` // decisions the audit could not order
	Commit   string        `json:"commit,omitempty"`
	Written  bool          `json:"written"` // false when nothing changed since the last audit
}

// Audit applies the rules as of day now (YYYY-MM-DD) without changing
// anything: what `memvault continuity audit --dry-run` prints.
func (c *Continuity) Audit(now string) *AuditReport { return audit(c, now) }

// audit applies the rules to c as of day now. It changes nothing; the
// caller records the actions as events.
func audit(c *Continuity, now string) *AuditReport {
	rep := &AuditReport{Now: now, Actions: []AuditAction{}, Flags: []AuditFlag{}, Ladder: []AuditAction{}, Blockers: []string{}}
	gone := map[string]bool{}
	// Step 1: decay. A learning not relevant for longer than its ttl is
	// archived; it stays retrievable with --all.
	for _, l := range c.Learnings {
		if l.Status != vault.StatusActive && l.Status != vault.StatusCorrected {
			continue
		}
		if l.TTL > l.BaseTTL {
			rep.Ladder = append(rep.Ladder, AuditAction{Action: "ttl", ID: l.ID,
				Reason: ladderReason(l)})
		}
		if age := daysBetween(l.LastRelevant, now); age > l.TTL {
			gone[l.ID] = true
			rep.Actions = append(rep.Actions, AuditAction{Action: "archive", ID: l.ID,
				Reason: "ttl expired: last relevant " + l.LastRelevant + ", " + itoa(age) + " days ago, ttl " + itoa(l.TTL)})
		}
	}
	// Step 2: conflicts between learnings of the same scope: the newer
	// wins, the older is invalidated.
	live := func(l *Learning) bool {
		return !gone[l.ID] && (l.Status == vault.StatusActive || l.Status == vault.StatusCorrected)
	}
	// Only learnings of one scope can conflict: compare within each scope,
	// in ledger order, each prevention split once.
	var scopes []string
	byScope := map[string][]*Learning{}
	inst := map[string][]instr{}
	for _, l := range c.Learnings {
		if live(l) {
			if byScope[l.Scope] == nil {
				scopes = append(scopes, l.Scope)
			}
			byScope[l.Scope] = append(byScope[l.Scope], l)
			neg, core := instruction(l.Prevention)
			inst[l.Scope] = append(inst[l.Scope], instr{neg, core})
		}
	}
	// Each older learning is invalidated by the first newer one of its
	// scope that contradicts it; scopes are independent.
	type conflict struct{ older, newer *Learning }
	var found []conflict
	for _, sc := range scopes {
		ls := byScope[sc]
		eachContradiction(inst[sc], func(i, j int) bool {
			found = append(found, conflict{ls[i], ls[j]})
			return false
		})
	}
	order := map[*Learning]int{}
	for i, l := range c.Learnings {
		order[l] = i
	}
	sort.SliceStable(found, func(a, b int) bool { return order[found[a].older] < order[found[b].older] })
	for _, f := range found {
		older, newer := f.older, f.newer
		gone[older.ID] = true
		rep.Flags = append(rep.Flags, AuditFlag{ID: newer.ID, Flag: FlagConflict,
			Reason: "contradicts " + older.ID + " in " + older.Scope + "; the newer one wins"})
		rep.Actions = append(rep.Actions, AuditAction{Action: "invalidate", ID: older.ID, By: newer.ID,
			Reason: "conflict: " + newer.ID + " (newer, same scope) says the opposite"})
	}
	// Step 3: integrity. Old and never reinforced: read it, but verify.
	for _, l := range c.Learnings {
		if !live(l) || l.ReinforceCount > 0 {
			continue
		}
		if age := daysBetween(l.LastRelevant, now); age > lowConfidenceDays {
			rep.Flags = append(rep.Flags, AuditFlag{ID: l.ID, Flag: FlagLowConfidence,
				Reason: "recorded " + itoa(age) + " days ago and never reinforced: verify before applying"})
		}
	}
	// Step 4: decisions of the same scope that contradict. Different days:
	// the newer supersedes the older. The same day: nothing says which came
	// to hold, so a person decides (an Active Blocker).
	rep.Blockers = decisionBlockers(c)
	for i, older := range c.Decisions {
		if older.Status != vault.StatusActive {
			continue
		}
		for _, newer := range c.Decisions[i+1:] {
			if newer.Status != vault.StatusActive || newer.Scope != older.Scope || !Contradicts(older.Decision, newer.Decision) {
				continue
			}
			if newer.Date > older.Date {
				rep.Actions = append(rep.Actions, AuditAction{Action: "supersede", ID: older.ID, By: newer.ID,
					Reason: "contradicted by " + newer.ID + " (" + newer.Date + ") in " + older.Scope})
				break
			}
		}
	}
	sort.SliceStable(rep.Flags, func(i, j int) bool { return idLess(rep.Flags[i].ID, rep.Flags[j].ID) })
	return rep
}

// decisionBlockers lists active decisions of the same scope that contradict
// and were made the same day: the audit cannot order them.
func decisionBlockers(c *Continuity) []string {
	out := []string{}
	// Only decisions of the same scope and day can be a blocker: compare
	// within those groups, in ledger order, rather than every pair.
	key := func(d *Decision) string { return d.Scope + "\x00" + d.Date }
	groups := map[string][]*Decision{}
	for _, d := range c.Decisions {
		if d.Status == vault.StatusActive {
			groups[key(d)] = append(groups[key(d)], d)
		}
	}
	type pair struct{ a, b *Decision }
	var pairs []pair
	for _, g := range groups {
		items := make([]instr, len(g))
		for i, d := range g {
			items[i].neg, items[i].core = instruction(d.Decision)
		}
		eachContradiction(items, func(i, j int) bool {
			pairs = append(pairs, pair{g[i], g[j]})
			return true
		})
	}
	// In ledger order of the first, then of the second, as a reader
	// expects them.
	order := map[*Decision]int{}
	for i, d := range c.Decisions {
		order[d] = i
	}
	sort.Slice(pairs, func(x, y int) bool {
		if order[pairs[x].a] != order[pairs[y].a] {
			return order[pairs[x].a] < order[pairs[y].a]
		}
		return order[pairs[x].b] < order[pairs[y].b]
	})
	for _, p := range pairs {
		out = append(out, "decisions "+p.a.ID+" and "+p.b.ID+" ("+p.a.Scope+") contradict and were made the same day: "+
			"keep one with memvault decide --supersedes")
	}
	return out
}

func ladderReason(l *Learning) string {
	if l.ReinforceCount >= 2 && l.TTL == ladderTTL(0, l.ReinforceCount) {
		return "reinforced " + itoa(l.ReinforceCount) + " times: ttl " + itoa(l.TTL)
	}
	return "ttl " + itoa(l.TTL) + " given when recorded"
}

// flagKey is the audit's flags in a stable form, to tell whether an audit
// has anything new to record.
func (r *AuditReport) flagStrings() []string {
	out := []string{}
	for _, f := range r.Flags {
		out = append(out, f.ID+" "+f.Flag)
	}
	return out
}

func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
