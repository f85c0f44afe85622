package continuity

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
)

// The views of the protocol: CONTINUITY.md (rendered, then merged with hand
// edits by continuity_write.go), learnings-index.md, and the parser that
// reads CONTINUITY.md back for `memvault continuity status`. Rendering is a
// pure function of the folded state and the configuration: no clock.

// Section titles of CONTINUITY.md, in order.
const (
	SecGoal      = "Active Goal"
	SecTask      = "Current Task"
	SecCompleted = "Just Completed"
	SecNext      = "Next Actions"
	SecBlockers  = "Active Blockers"
	SecDecisions = "Key Decisions"
	SecLearnings = "Mistakes & Learnings"
	SecContext   = "Working Context"
	SecFiles     = "Files Being Modified"
)

// ContinuitySections lists the sections of CONTINUITY.md in order.
var ContinuitySections = []string{SecGoal, SecTask, SecCompleted, SecNext, SecBlockers, SecDecisions, SecLearnings, SecContext, SecFiles}

// sectionAliases are other titles people (and the seed protocol's template,
// and `memvault edit`'s first template) use for the same sections.
var sectionAliases = map[string]string{
	"blockers":                       SecBlockers,
	"next actions (priority order)":  SecNext,
	"key decisions this session":     SecDecisions,
	"files currently being modified": SecFiles,
	"files modified":                 SecFiles,
	"mistakes and learnings":         SecLearnings,
}

// LearningsIndexFile is the cheapest summary of the learnings (~100 tokens).
const LearningsIndexFile = "learnings-index.md"

const continuityTitle = "# CONTINUITY"
const continuityPreamble = "<!-- memvault: working memory, rendered from the ledger; hand edits are merged, not lost. See docs/CONTINUITY.md. -->"

// completedDays is how long an entry stays in Just Completed: the
// protocol's working memory holds a week (seed 002's Tier 2).
const completedDays = 7

// quotas: how many entries each section shows at most, before the word cap.
var sectionQuota = map[string]int{
	SecGoal: 1, SecTask: 1, SecCompleted: 5, SecNext: 10, SecBlockers: 5, SecDecisions: 5, SecLearnings: 8, SecContext: 10, SecFiles: 10,
}

// fill order: what matters most gets the words first.
var fillOrder = []string{SecGoal, SecTask, SecBlockers, SecNext, SecLearnings, SecDecisions, SecCompleted, SecContext, SecFiles}

// ContinuityDoc is a render of CONTINUITY.md and what the cap left out.
type ContinuityDoc struct {
	Bytes   []byte         `json:"-"`
	Words   int            `json:"words"`
	Cap     int            `json:"cap"`
	Omitted map[string]int `json:"omitted,omitempty"` // section → entries left out by the cap (all still in the ledger)
}

// safeLine folds text onto one line, clips it, and neutralises what could
// change the document's structure (a heading, a quote, a comment that
// could forge the keep marker).
func safeLine(s string, n int) string {
	s = vault.Clip(vault.OneLine(s), n)
	s = strings.ReplaceAll(s, "<!--", "&lt;!--")
	s = strings.ReplaceAll(s, "-->", "--&gt;")
	if strings.HasPrefix(s, "#") || strings.HasPrefix(s, ">") {
		s = `\` + s
	}
	return s
}

func countWords(s string) int { return len(strings.Fields(s)) }

// LearningLine is how a learning reads in CONTINUITY.md and in listings.
func (l *Learning) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%s] ", l.ID, rowLabel(l.Scope, l.Thread))
	if l.Cause != "" || l.Prevention != "" {
		// error → cause → prevention: recorded from a failure (`learn
		// --error`, LEARNED: what | how to prevent it). A plain learning
		// is a thing learned, not a failure.
		b.WriteString("What failed: ")
	}
	b.WriteString(safeLine(l.Error, 160))
	if l.Cause != "" {
		fmt.Fprintf(&b, " Why: %s", safeLine(l.Cause, 160))
	}
	if l.Prevention != "" {
		fmt.Fprintf(&b, " Prevention: %s", safeLine(l.Prevention, 200))
	}
	b.WriteString(" (")
	if l.ReinforceCount > 0 {
		fmt.Fprintf(&b, "reinforced %d×, ", l.ReinforceCount)
	}
	fmt.Fprintf(&b, "ttl %d, last %s)", l.TTL, l.LastRelevant)
	if l.Status == vault.StatusCorrected {
		b.WriteString(" corrected")
	}
	for _, f := range l.Flags {
		b.WriteString(" " + f)
	}
	return b.String()
}

// rowLabel is the bracket a learning or decision is listed with: its
// thread when it has one ("[global]" means a row of no thread, as
// everywhere else), then its scope unless that is global
// ("[project:shop module:api]").
func rowLabel(scope, thread string) string {
	switch {
	case thread == "":
		return orGlobal(scope)
	case scope == "" || scope == ScopeGlobal:
		return thread
	}
	return thread + " " + scope
}

// Line is how a decision reads in CONTINUITY.md and in listings.
func (d *Decision) Line() string {
	s := fmt.Sprintf("%s [%s] %s", d.ID, rowLabel(d.Scope, d.Thread), safeLine(d.Decision, 200))
	if d.Rationale != "" {
		s += ": " + safeLine(d.Rationale, 200)
	}
	s += " (" + d.Date
	if d.SupersededBy != "" {
		s += ", superseded by " + d.SupersededBy
	}
	return s + ")"
}

// ActiveLearnings returns the learnings that are read (active, corrected)
// and in play for f, smallest scope first.
func (c *Continuity) ActiveLearnings(f ScopeFilter, all bool) []*Learning {
	var out []*Learning
	for _, l := range c.Learnings {
		if (all || l.Status == vault.StatusActive || l.Status == vault.StatusCorrected) && f.Match(l.Scope) {
			out = append(out, l)
		}
	}
	sortLearnings(out)
	if out == nil {
		out = []*Learning{}
	}
	return out
}

// decisionFirst is ActiveDecisions' order: smallest scope first, then the
// newest (seq grows along c.Decisions).
func decisionFirst(a, b *Decision) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.seq > b.seq
}

// smallest returns the first k of xs in the order less, as a stable sort
// would give them; less must be a total order (no two items tie), which
// seq makes it for learnings and decisions. The render and the index show
// a handful of 10k learnings: selecting them costs far less than sorting.
func smallest[T any](xs []T, k int, less func(a, b T) bool) []T {
	if k <= 0 || len(xs) == 0 {
		return nil
	}
	if k >= len(xs)/4 {
		out := append([]T(nil), xs...)
		sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
		return out[:min(k, len(out))]
	}
	out := make([]T, 0, k)
	for _, x := range xs {
		if len(out) == k && !less(x, out[k-1]) {
			continue
		}
		i := sort.Search(len(out), func(i int) bool { return less(x, out[i]) })
		if len(out) < k {
			out = append(out, x)
		}
		copy(out[i+1:], out[i:len(out)-1])
		out[i] = x
	}
	return out
}

// ActiveDecisions returns the decisions in play for f, smallest scope
// first, newest first within a scope.
func (c *Continuity) ActiveDecisions(f ScopeFilter, all bool) []*Decision {
	var out []*Decision
	for i := len(c.Decisions) - 1; i >= 0; i-- {
		d := c.Decisions[i]
		if (all || d.Status == vault.StatusActive) && f.Match(d.Scope) {
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].rank < out[j].rank })
	if out == nil {
		out = []*Decision{}
	}
	return out
}

// renderContinuity renders CONTINUITY.md within cap words. The skeleton
// (title, preamble, header, headings) is always there; entries
// are added in fillOrder while they fit; a section that lost entries says
// how many, and they stay in the ledger (`memvault continuity learnings`
// and friends list them all).
func renderContinuity(c *Continuity, capWords int) *ContinuityDoc {
	p := &continuityPage{header: continuityHeader(c), entries: map[string][]string{}, total: map[string]int{}, chosen: map[string]int{}}
	p.addWork(c)
	p.addRecords(c)
	p.fill(capWords)
	out := p.build()
	// The "… more" lines cost words too: give entries back, least
	// important first, until the whole fits.
	for countWords(out) > capWords {
		if !p.giveBack() {
			break // the skeleton alone is over the cap
		}
		out = p.build()
	}
	omitted := map[string]int{}
	for _, s := range ContinuitySections {
		if n := p.total[s] - p.chosen[s]; n > 0 {
			omitted[s] = n
		}
	}
	return &ContinuityDoc{Bytes: []byte(out), Words: countWords(out), Cap: capWords, Omitted: omitted}
}

// continuityPage is CONTINUITY.md being laid out: the header lines, each
// section's lines up to its quota (no more can be shown), how many entries
// it has in all (for the "… N more" line), and how many of its lines the
// word cap lets in.
type continuityPage struct {
	header  []string
	entries map[string][]string
	total   map[string]int
	chosen  map[string]int
}

// add counts an entry of section sec and keeps its line while the
// section's quota has room.
func (p *continuityPage) add(sec, line string) {
	p.total[sec]++
	if len(p.entries[sec]) < sectionQuota[sec] {
		p.entries[sec] = append(p.entries[sec], line)
	}
}

// addWork adds the sections about the work itself: the goal, the current
// task, what was just completed, the next actions and open commitments,
// and the blockers.
func (p *continuityPage) addWork(c *Continuity) {
	if c.Goal != "" {
		p.add(SecGoal, safeLine(c.Goal, 400))
	}
	if len(c.Next) > 0 {
		n := c.Next[0]
		p.add(SecTask, "- "+safeLine(n.Text, 200)+" (since "+n.Date+")")
	}
	// Just Completed is working memory: an entry done more than
	// completedDays before the day of the newest protocol event has
	// rotated out to long-term memory (the ledger's done events, the
	// session's node), counted in the "… N more in the ledger" line. The
	// age is measured on the ledger's times, never the clock, so a render
	// gives the same bytes on any machine.
	newest := dayOf(c.Updated)
	for i := len(c.Done) - 1; i >= 0 && len(p.entries[SecCompleted]) < sectionQuota[SecCompleted]; i-- {
		if newest != "" && daysBetween(c.Done[i].Date, newest) > completedDays {
			continue
		}
		p.add(SecCompleted, "- "+safeLine(c.Done[i].Text, 200)+" ("+c.Done[i].Date+")")
	}
	p.total[SecCompleted] = len(c.Done)
	// Open commitments are promises still to keep: numbered after the next
	// actions, as `memvault done N` counts them.
	for i, n := range append(append([]Item(nil), c.Next...), c.Commitments...) {
		if i >= sectionQuota[SecNext] {
			break
		}
		line := strconv.Itoa(i+1) + ". " + safeLine(n.Text, 200)
		if i >= len(c.Next) {
			line += " (commitment `" + n.ID + "`)"
		}
		p.add(SecNext, line)
	}
	p.total[SecNext] = len(c.Next) + len(c.Commitments)
	// Blockers in the order they were raised, as every view lists open
	// items (render.Queue).
	for _, b := range c.Blockers {
		p.add(SecBlockers, "- "+safeLine(b.Text, 200)+" (`"+b.ID+"`)")
	}
	for _, b := range decisionBlockers(c) {
		p.add(SecBlockers, "- "+b)
	}
}

// addRecords adds the sections of what the work left to know: the active
// decisions and the learnings read, each the few that come first (a vault
// holds thousands), the working context and the files being modified.
func (p *continuityPage) addRecords(c *Continuity) {
	var decs []*Decision
	for _, d := range c.Decisions {
		if d.Status == vault.StatusActive {
			decs = append(decs, d)
		}
	}
	for _, d := range smallest(decs, sectionQuota[SecDecisions], decisionFirst) {
		p.add(SecDecisions, "- "+d.Line())
	}
	p.total[SecDecisions] = len(decs)
	var live []*Learning
	for _, l := range c.Learnings {
		if l.Status == vault.StatusActive || l.Status == vault.StatusCorrected {
			live = append(live, l)
		}
	}
	for _, l := range smallest(live, sectionQuota[SecLearnings], readFirst) {
		p.add(SecLearnings, "- "+l.Line())
	}
	p.total[SecLearnings] = len(live)
	for _, s := range c.Context {
		p.add(SecContext, "- "+safeLine(s, 400))
	}
	for _, f := range c.Files {
		p.add(SecFiles, "- "+safeLine(f, 200))
	}
}

// continuityHeader is the title, preamble and status lines that open
// CONTINUITY.md.
//
// Only what someone set is shown: the phase once `memvault goal --phase`
// set one, and with it the iteration (the sessions ended so far); no
// default phase and no count nobody asked for.
func continuityHeader(c *Continuity) []string {
	updated := c.Updated
	if updated == "" {
		updated = "never"
	}
	h := []string{continuityTitle, "", continuityPreamble, "", "Last Updated: " + updated}
	if c.Phase != "" {
		h = append(h, "Current Phase: "+c.Phase, "Current Iteration: "+strconv.Itoa(c.Iteration))
	}
	return h
}

// fill chooses the lines the cap lets in: one pass in fill order, each
// section up to its quota, while the words last after the skeleton; a
// section that met the cap takes nothing more.
func (p *continuityPage) fill(capWords int) {
	used := 0
	for _, h := range p.header {
		used += countWords(h)
	}
	for _, s := range ContinuitySections {
		used += countWords("## " + s)
	}
	for _, s := range fillOrder {
		for p.chosen[s] < len(p.entries[s]) {
			w := countWords(p.entries[s][p.chosen[s]])
			if used+w > capWords {
				break
			}
			used += w
			p.chosen[s]++
		}
	}
}

// build writes the document with the chosen lines and each section's "…
// N more" line. An empty section is its heading alone: kept, so that the
// three-way merge matches every section by heading and a person can write
// into it, but with no "- none" under it.
func (p *continuityPage) build() string {
	var b strings.Builder
	for _, h := range p.header {
		b.WriteString(h + "\n")
	}
	for _, s := range ContinuitySections {
		b.WriteString("\n## " + s + "\n")
		n := p.chosen[s]
		if n == 0 && p.total[s] == 0 {
			continue
		}
		b.WriteByte('\n')
		for _, l := range p.entries[s][:n] {
			b.WriteString(l + "\n")
		}
		if n < p.total[s] {
			fmt.Fprintf(&b, "- … %d more in the ledger\n", p.total[s]-n)
		}
	}
	return b.String()
}

// giveBack drops the last chosen line of the least important section that
// has one, and reports false when no section has any left.
func (p *continuityPage) giveBack() bool {
	for i := len(fillOrder) - 1; i >= 0; i-- {
		if s := fillOrder[i]; p.chosen[s] > 0 {
			p.chosen[s]--
			return true
		}
	}
	return false
}

// renderLearningsIndex renders learnings-index.md: counts, then the
// strongest learnings (most reinforced, then most recent) while the whole
// stays within budget tokens.
func renderLearningsIndex(c *Continuity, budget int) []byte {
	counts := map[string]int{}
	var scopes [4]int // by scopeRank: file, module, global, malformed
	var act []*Learning
	for _, l := range c.Learnings {
		counts[l.Status]++
		if l.Status == vault.StatusActive || l.Status == vault.StatusCorrected {
			act = append(act, l)
			scopes[min(max(l.rank, 0), 3)]++
		}
	}
	var b strings.Builder
	b.WriteString("# Learnings index\n\n")
	fmt.Fprintf(&b, "%d active (%d global, %d module, %d file), %d archived, %d invalidated. Full list: memvault continuity learnings\n\n",
		len(act), scopes[2], scopes[1], scopes[0], counts[vault.StatusArchived], counts[vault.StatusInvalidated])
	used := render.Tokens(b.String())
	shown := 0
	// Strongest first. Every line costs a token at least, so no more than
	// budget+1 of them are looked at: select those rather than sort 10k.
	for _, l := range smallest(act, budget+1, stronger) {
		what := l.Prevention
		if what == "" {
			what = l.Error // a plain learning: its text
		}
		line := fmt.Sprintf("- %s [%s] %s\n", l.ID, rowLabel(l.Scope, l.Thread), safeLine(what, 80))
		if used+render.Tokens(line) > budget {
			break
		}
		used += render.Tokens(line)
		b.WriteString(line)
		shown++
	}
	if shown == 0 && len(act) == 0 {
		b.WriteString("- none\n")
	} else if shown < len(act) {
		fmt.Fprintf(&b, "- … %d more\n", len(act)-shown)
	}
	return []byte(b.String())
}

func stronger(a, b *Learning) bool {
	if a.ReinforceCount != b.ReinforceCount {
		return a.ReinforceCount > b.ReinforceCount
	}
	if a.LastRelevant != b.LastRelevant {
		return a.LastRelevant > b.LastRelevant
	}
	return a.seq > b.seq
}
