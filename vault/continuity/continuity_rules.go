package continuity

import (
	"sort"
	"strings"
	"time"
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
	// Hidden counts the entries left out of the report because they name
	// a row of an agent the reader may not see (ScopedTo).
	Hidden int `json:"hidden,omitempty"`
	// changes is the first day after Now on which the clock alone would
	// change the outcome (a learning's ttl runs out, one becomes
	// LOW_CONFIDENCE); "" when none would. An outcome computed for Now
	// holds from Now until the day before.
	changes string
}

// Audit applies the rules as of day now (YYYY-MM-DD) without changing
// anything: what `memvault continuity audit --dry-run` prints. With a
// vault, the learnings whose prevention names what the project no longer
// has are flagged SUSPECT too (suspect.go); nil leaves that check out.
func (c *Continuity) Audit(now string, v *vault.Vault) *AuditReport {
	rep := audit(c, now)
	if v != nil {
		auditSuspects(c, rep, newSuspectCheck(v))
	}
	return rep
}

// audit applies the rules to c as of day now. It changes nothing; the
// caller records the actions as events, or (at session start) leaves out
// what they take away.
func audit(c *Continuity, now string) *AuditReport {
	rep := &AuditReport{Now: now, Actions: []AuditAction{}, Flags: []AuditFlag{}, Ladder: []AuditAction{}, Blockers: []string{}}
	gone := map[string]bool{}
	auditDecay(c, now, rep, gone)
	live := func(l *Learning) bool {
		return !gone[l.ID] && (l.Status == vault.StatusActive || l.Status == vault.StatusCorrected)
	}
	auditRewordings(c, rep, gone, live)
	auditConflicts(c, rep, gone, live)
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
	auditDecisions(c, rep)
	sort.SliceStable(rep.Flags, func(i, j int) bool { return idLess(rep.Flags[i].ID, rep.Flags[j].ID) })
	rep.changes = clockChanges(c, now, live)
	return rep
}

// auditDecay is step 1: a learning not relevant for longer than its ttl is
// archived; it stays retrievable with --all.
func auditDecay(c *Continuity, now string, rep *AuditReport, gone map[string]bool) {
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
}

// auditRewordings is step 1b, reinforcement: a live learning that rewords
// an older live one of its scope (similar) reinforces the older one and
// is archived, as `learn` would have done had it been recorded after this
// rule (or through a way in that does not compare).
func auditRewordings(c *Continuity, rep *AuditReport, gone map[string]bool, live func(*Learning) bool) {
	scopes, byScope := byScopeOf(c.Learnings, live, func(l *Learning) string { return l.Scope })
	for _, sc := range scopes {
		ls := byScope[sc]
		items := make([]instr, len(ls))
		for i, l := range ls {
			items[i].neg, items[i].core = words(l.Error)
		}
		eachPair(items, similarRule, func(i, j int) bool {
			older, newer := ls[i], ls[j]
			if gone[older.ID] || gone[newer.ID] {
				return true
			}
			ok, why := similarWords(items[i].neg, items[i].core, items[j].neg, items[j].core)
			if !ok {
				return true
			}
			gone[newer.ID] = true
			rep.Actions = append(rep.Actions, AuditAction{Action: "reinforce", ID: older.ID, By: newer.ID,
				Reason: newer.ID + " rewords " + older.ID + " in " + sc + " (" + why + "): " + older.ID + " is reinforced, " + newer.ID + " archived"})
			return true
		})
	}
}

// auditConflicts is step 2: two live learnings of one scope whose
// preventions contradict (Conflict): the newer wins, the older is
// invalidated.
func auditConflicts(c *Continuity, rep *AuditReport, gone map[string]bool, live func(*Learning) bool) {
	// Only learnings of one scope can conflict: compare within each scope,
	// in ledger order, each prevention split once.
	scopes, byScope := byScopeOf(c.Learnings, live, func(l *Learning) string { return l.Scope })
	// Each older learning is invalidated by the first newer one of its
	// scope that contradicts it; scopes are independent.
	type conflict struct {
		older, newer *Learning
		why          string
	}
	var found []conflict
	for _, sc := range scopes {
		ls := byScope[sc]
		texts := make([]string, len(ls))
		for i, l := range ls {
			texts[i] = l.Prevention
		}
		for _, p := range firstConflicts(texts) {
			found = append(found, conflict{ls[p.i], ls[p.j], p.why})
		}
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
			Reason: "conflict: " + newer.ID + " (newer, same scope) says otherwise: " + f.why})
	}
}

// conflictPair is two texts i < j that contradict, and why.
type conflictPair struct {
	i, j int
	why  string
}

// allConflicts lists every pair of texts that contradict by either rule
// (the negation rule, two choices for one subject), i ascending, then j.
func allConflicts(texts []string) []conflictPair {
	items := make([]instr, len(texts))
	cs := make([]choice, len(texts))
	for i, t := range texts {
		items[i].neg, items[i].core = instruction(t)
		cs[i] = parseChoice(t)
	}
	seen := map[[2]int]bool{}
	var out []conflictPair
	eachContradiction(items, func(i, j int) bool {
		seen[[2]int{i, j}] = true
		out = append(out, conflictPair{i, j, "one says not to do what the other says (negation, most words shared)"})
		return true
	})
	eachChoiceConflict(cs, func(i, j int, why string) bool {
		if !seen[[2]int{i, j}] {
			out = append(out, conflictPair{i, j, why})
		}
		return true
	})
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].i != out[b].i {
			return out[a].i < out[b].i
		}
		return out[a].j < out[b].j
	})
	return out
}

// firstConflicts is, for each i, the first j > i its text conflicts with.
func firstConflicts(texts []string) []conflictPair {
	var out []conflictPair
	for _, p := range allConflicts(texts) {
		if len(out) == 0 || out[len(out)-1].i != p.i {
			out = append(out, p)
		}
	}
	return out
}

// auditDecisions is step 4: decisions of the same scope that contradict
// (Conflict). Different days: the newer supersedes the older. The same
// day: nothing says which came to hold, so a person decides (an Active
// Blocker).
func auditDecisions(c *Continuity, rep *AuditReport) {
	rep.Blockers = decisionBlockers(c)
	scopes, byScope := byScopeOf(c.Decisions, func(d *Decision) bool { return d.Status == vault.StatusActive },
		func(d *Decision) string { return d.Scope })
	type sup struct {
		older, newer *Decision
		why          string
	}
	var found []sup
	for _, sc := range scopes {
		ds := byScope[sc]
		texts := make([]string, len(ds))
		for i, d := range ds {
			texts[i] = d.Decision
		}
		// The later day wins, whichever was recorded first (a decision
		// recorded late with --now of an earlier day is the older one).
		done := map[int]bool{}
		for _, p := range allConflicts(texts) {
			lose, win := p.i, p.j
			if ds[lose].Date > ds[win].Date {
				lose, win = win, lose
			}
			if !done[lose] && ds[win].Date > ds[lose].Date {
				done[lose] = true
				found = append(found, sup{ds[lose], ds[win], p.why})
			}
		}
	}
	sort.SliceStable(found, func(a, b int) bool { return found[a].older.seq < found[b].older.seq })
	for _, f := range found {
		rep.Actions = append(rep.Actions, AuditAction{Action: "supersede", ID: f.older.ID, By: f.newer.ID,
			Reason: "contradicted by " + f.newer.ID + " (" + f.newer.Date + ") in " + f.older.Scope + ": " + f.why})
	}
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
	type pair struct {
		a, b *Decision
		why  string
	}
	var pairs []pair
	for _, g := range groups {
		texts := make([]string, len(g))
		for i, d := range g {
			texts[i] = d.Decision
		}
		for _, p := range allConflicts(texts) {
			pairs = append(pairs, pair{g[p.i], g[p.j], p.why})
		}
	}
	// In ledger order of the first, then of the second, as a reader
	// expects them.
	sort.Slice(pairs, func(x, y int) bool {
		if pairs[x].a.seq != pairs[y].a.seq {
			return pairs[x].a.seq < pairs[y].a.seq
		}
		return pairs[x].b.seq < pairs[y].b.seq
	})
	for _, p := range pairs {
		out = append(out, "decisions "+p.a.ID+" and "+p.b.ID+" ("+p.a.Scope+") contradict and were made the same day ("+p.why+"): "+
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

// clockChanges is the first day after now on which the clock alone
// changes the audit's outcome: a live learning's ttl runs out (it is
// archived the day after its last day) or a never-reinforced one turns
// LOW_CONFIDENCE; "" when no learning is live.
func clockChanges(c *Continuity, now string, live func(*Learning) bool) string {
	first := ""
	note := func(day string) {
		if day > now && (first == "" || day < first) {
			first = day
		}
	}
	for _, l := range c.Learnings {
		if !live(l) {
			continue
		}
		note(addDays(l.LastRelevant, l.TTL+1))
		if l.ReinforceCount == 0 {
			note(addDays(l.LastRelevant, lowConfidenceDays+1))
		}
	}
	return first
}

// addDays is the protocol date n days after day; "" for a malformed day.
func addDays(day string, n int) string {
	t, err := time.Parse(dateLayout, dayOf(day))
	if err != nil {
		return ""
	}
	return t.AddDate(0, 0, n).Format(dateLayout)
}

// byScopeOf groups the items that keep by their scope, in ledger order,
// and lists the scopes in the order first met.
func byScopeOf[T any](items []T, keep func(T) bool, scope func(T) string) ([]string, map[string][]T) {
	var scopes []string
	by := map[string][]T{}
	for _, it := range items {
		if !keep(it) {
			continue
		}
		sc := scope(it)
		if by[sc] == nil {
			scopes = append(scopes, sc)
		}
		by[sc] = append(by[sc], it)
	}
	return scopes, by
}
