package continuity

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// The readers of the protocol: status, budget, and the session-start
// injection. They take no lock and write nothing.

// BudgetLine is one category of the token budget.
type BudgetLine struct {
	Category string `json:"category"`
	Tokens   int    `json:"tokens"`
	Budget   int    `json:"budget"`
	Over     bool   `json:"over"`
}

// ContinuityStatus is what `memvault continuity status` shows.
type ContinuityStatus struct {
	Source       string              `json:"source"` // file, or render when CONTINUITY.md does not exist yet
	Goal         string              `json:"goal"`
	Phase        string              `json:"phase"`
	Iteration    string              `json:"iteration"`
	Updated      string              `json:"updated"`
	CurrentTask  string              `json:"current_task"`
	Next         []string            `json:"next"`
	Blockers     []string            `json:"blockers"`
	Words        int                 `json:"words"`
	Cap          int                 `json:"cap"`
	Learnings    int                 `json:"active_learnings"`
	Decisions    int                 `json:"active_decisions"`
	LastAudit    string              `json:"last_audit,omitempty"`
	Deferred     int                 `json:"deferred"`
	Conflicts    int                 `json:"conflicts"`
	Budget       []BudgetLine        `json:"budget"`
	Unknown      map[string][]string `json:"unknown_sections,omitempty"`
	Warnings     []string            `json:"warnings"`
	continuityMD []byte
}

// ContinuityStatus reads CONTINUITY.md as it is (hand edits included) and
// the protocol's state. A file in a shape the parser does not know is read
// as far as it goes, with warnings; nothing is changed.
func LoadContinuityStatus(v *vault.Vault) (*ContinuityStatus, error) {
	cfg, st, err := continuityConfigState(v)
	if err != nil {
		return nil, err
	}
	s, err := continuityStatus(v, cfg, st)
	if err != nil {
		return nil, err
	}
	st.saveIfDirty(cfg)
	return s, nil
}

// continuityStatus reads the status from the state's summary: at 10k
// learnings nothing here looks at a learning.
func continuityStatus(v *vault.Vault, cfg ContinuityConfig, st *contState) (*ContinuityStatus, error) {
	sum, err := st.summary(cfg)
	if err != nil {
		return nil, err
	}
	data, err := v.Files().ReadFile(filepath.Join(v.Root, vault.ContinuityHead))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fault.IO("read "+vault.ContinuityHead, err)
	}
	memory, _ := v.Files().ReadFile(filepath.Join(v.Root, vault.MemoryHead))
	return statusOf(cfg, st, sum, data, memory), nil
}

// statusOf is the status of CONTINUITY.md's text data (nil: none yet,
// read as the summary's render) with the summary sum of the learnings and
// decisions, and MEMORY.md's text memory for the budget.
func statusOf(cfg ContinuityConfig, st *contState, sum *contSummary, data, memory []byte) *ContinuityStatus {
	src := "file"
	if data == nil {
		data, src = []byte(sum.Render), "render"
	}
	p := parseContinuity(data)
	s := &ContinuityStatus{Source: src, Phase: p.Phase, Iteration: p.Iteration, Updated: p.Updated,
		Next: items(p.Sections[SecNext]), Blockers: items(p.Sections[SecBlockers]),
		Words: countWords(string(data)), Cap: cfg.Words, LastAudit: st.lastAudit, Unknown: p.Unknown, Warnings: p.Warnings,
		Learnings: sum.Active, Decisions: sum.Decisions, continuityMD: data}
	s.Goal = strings.Join(items(p.Sections[SecGoal]), " ")
	if t := items(p.Sections[SecTask]); len(t) > 0 {
		s.CurrentTask = t[0]
	}
	s.Deferred, s.Conflicts = len(st.head.Deferred), len(st.head.Conflicts)
	if s.Words > s.Cap {
		s.Warnings = append(s.Warnings, "CONTINUITY.md: "+itoa(s.Words)+" words, over its cap of "+itoa(s.Cap)+"; the next update moves hand-written lines to the ledger")
	}
	s.Budget = budget(cfg, sum, data, memory)
	return s
}

// budget measures the tokens each category costs against its budget. The
// learnings and decisions count as listed for the whole project, one line
// each (the summary's sums).
func budget(cfg ContinuityConfig, sum *contSummary, continuityMD, memory []byte) []BudgetLine {
	used := map[string]int{
		"memory":     render.Tokens(string(memory)),
		"continuity": render.Tokens(string(continuityMD)),
		"learnings":  sum.LearnTokens,
		"decisions":  sum.DecTokens,
		"index":      render.Tokens(sum.Index),
	}
	var out []BudgetLine
	total := 0
	for _, k := range budgetCategories {
		out = append(out, BudgetLine{Category: k, Tokens: used[k], Budget: cfg.Budgets[k], Over: used[k] > cfg.Budgets[k]})
		total += used[k]
	}
	out = append(out, BudgetLine{Category: "total", Tokens: total, Budget: cfg.ContextWindow, Over: total > cfg.ContextWindow})
	return out
}

// ContinuityBudget is `memvault continuity budget`: tokens per category.
func ContinuityBudget(v *vault.Vault) ([]BudgetLine, error) {
	s, err := LoadContinuityStatus(v)
	if err != nil {
		return nil, err
	}
	return s.Budget, nil
}

// Injection is what a session start loads: the live sections as the file
// has them, and the learnings and decisions in play.
type Injection struct {
	Text      string        `json:"text"`
	Learnings []InjectedRow `json:"learnings"`
	Decisions []InjectedRow `json:"decisions"`
	Tokens    int           `json:"tokens"`
}

// InjectedRow is a learning or decision as a session is shown it.
type InjectedRow struct {
	Line  string `json:"line"`  // as listed: "L3 [global] What failed: …"
	Event string `json:"event"` // the event that recorded it
	Text  string `json:"text"`  // the error or the decision alone
}

// ContinuityAtSessionStartFor is what the hooks call when a session of
// agent starts: the live sections of CONTINUITY.md (goal, task, next
// actions, blockers) and the learnings and decisions agent may see
// (SeesAgent) whose scope is in play for work in dir (relative to the
// project root; "" or "." for the whole project), smallest scope first,
// within the learnings and decisions budgets. A session of the vault's own
// agent at the project's root reads them from the derived state's summary,
// without decoding the fold.
func ContinuityAtSessionStartFor(v *vault.Vault, dir, agent string) (*Injection, error) {
	var s *ContinuityStatus
	var rows *Injection
	err := withSessionState(v, func(cfg ContinuityConfig, st *contState) error {
		var err error
		if s, err = continuityStatus(v, cfg, st); err != nil {
			return err
		}
		f := FilterForDir(dir)
		if f == (ScopeFilter{}) && (agent == "" || agent == v.Config.Agent) && st.sum != nil && st.sum.Root != nil {
			rows = st.sum.Root
		} else {
			c, err := st.full()
			if err != nil {
				return err
			}
			rows = inScope(c, f, cfg, func(owner string) bool { return SeesAgent(v, agent, owner) }, st.sum.Audit)
		}
		st.saveIfDirty(cfg)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("# Working memory (CONTINUITY.md)\n\n")
	if s.Goal != "" {
		b.WriteString("Active goal: " + s.Goal + "\n")
	}
	if s.CurrentTask != "" {
		b.WriteString("Current task: " + s.CurrentTask + "\n")
	}
	for i, n := range s.Next {
		b.WriteString("Next " + itoa(i+1) + ": " + n + "\n")
	}
	for _, bl := range s.Blockers {
		b.WriteString("Blocker: " + bl + "\n")
	}
	b.WriteString(rows.Text)
	inj := &Injection{Text: b.String(), Learnings: rows.Learnings, Decisions: rows.Decisions}
	inj.Tokens = render.Tokens(inj.Text)
	return inj, nil
}

// inScope picks the learnings and decisions of c a session is shown for
// filter f: active, of no thread (a thread's rows come with its head, and
// only in a session of that thread: DESIGN §7), recorded by an agent the
// session sees, smallest scope first, within the learnings and decisions
// budgets, less what the audit's outcome o takes away (nil: nothing), with
// its flags. Text lists them under their headings.
func inScope(c *Continuity, f ScopeFilter, cfg ContinuityConfig, sees func(agent string) bool, o *auditOutcome) *Injection {
	inj := &Injection{}
	var b strings.Builder
	inj.Learnings = injectRows(&b, "\n## Learnings in scope (smallest scope first)\n\n", cfg.Budgets["learnings"],
		c.ActiveLearnings(f, false), func(l *Learning) (InjectedRow, bool) {
			if l.Thread != "" || !sees(l.Agent) || o.Takes(l.Event) {
				return InjectedRow{}, false
			}
			if o != nil {
				if fl := todaysFlags(l.Flags, o.flags[l.ID]); !slices.Equal(l.Flags, fl) {
					cp := *l // the flags of the audit as of today, not of the last one written
					cp.Flags = fl
					l = &cp
				}
			}
			return InjectedRow{Line: l.Line(), Event: l.Event, Text: l.Error}, true
		})
	inj.Decisions = injectRows(&b, "\n## Decisions in scope\n\n", cfg.Budgets["decisions"],
		c.ActiveDecisions(f, false), func(d *Decision) (InjectedRow, bool) {
			if d.Thread != "" || !sees(d.Agent) || o.Takes(d.Event) {
				return InjectedRow{}, false
			}
			return InjectedRow{Line: d.Line(), Event: d.Event, Text: d.Decision}, true
		})
	inj.Text = b.String()
	inj.Tokens = render.Tokens(inj.Text)
	return inj
}

// injectRows lists in b, under heading, the rows of items a session is
// shown (those row accepts), in order, until the next line would take
// their lines past budget tokens; the heading only when one is listed.
// The rows come back, never nil: an injection lists none as [].
func injectRows[T any](b *strings.Builder, heading string, budget int, items []T, row func(T) (InjectedRow, bool)) []InjectedRow {
	out := []InjectedRow{}
	used := 0
	for _, it := range items {
		r, ok := row(it)
		if !ok {
			continue
		}
		line := "- " + r.Line + "\n"
		if used+render.Tokens(line) > budget {
			break
		}
		if len(out) == 0 {
			b.WriteString(heading)
		}
		used += render.Tokens(line)
		b.WriteString(line)
		out = append(out, r)
	}
	return out
}

// ProjectDir turns a working directory into the directory in play,
// relative to the project root (the folder holding the vault): "" at the
// root, inside the vault itself, or outside the project.
func ProjectDir(v *vault.Vault, wd string) string {
	if in, err := filepath.Rel(v.Root, wd); err == nil && !strings.HasPrefix(in, "..") {
		return "" // the vault's own folder is the project's, not a module of it
	}
	root := filepath.Dir(v.Root)
	rel, err := filepath.Rel(root, wd)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return ""
	}
	return filepath.ToSlash(rel)
}

// RenderContinuity renders CONTINUITY.md from the ledger without writing:
// what the next update would merge in.
func RenderContinuity(v *vault.Vault) (*ContinuityDoc, error) {
	cfg, st, err := continuityConfigState(v)
	if err != nil {
		return nil, err
	}
	sum, err := st.summary(cfg)
	if err != nil {
		return nil, err
	}
	st.saveIfDirty(cfg)
	return sum.doc(), nil
}

// todaysFlags are a learning's flags at session start: those of the audit
// as of today (the rules' own, a pure function of the ledger and the day),
// and SUSPECT as the last written audit found it, which looked at the
// project's files (a session start does not walk the project).
func todaysFlags(written, today []string) []string {
	if !slices.Contains(written, FlagSuspect) || slices.Contains(today, FlagSuspect) {
		return today
	}
	return append(slices.Clip(today), FlagSuspect)
}
