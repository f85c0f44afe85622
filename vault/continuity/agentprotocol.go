package continuity

import (
	"errors"
	"io/fs"
	"regexp"
	"slices"
	"sync"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/heads"
)

// The protocol's readers as an agent is shown them (agentview.go): the
// learnings, decisions, status, budget, index and audit report of
// `memvault continuity …`, less what agents the reader may not see wrote.
// The vault's own agent is shown exactly what the commands print. Another
// agent is shown the same fold, ids and all (L3 is L3 for every reader),
// without the rows of a third agent: their learnings and decisions are not
// listed or counted, and an audit entry naming one of them is left out.

// AgentContinuity is the protocol's state as agent may see it: LoadContinuity
// for the vault's own agent; for another, a copy whose learnings,
// decisions, meta-learnings and live items are those agent may see
// (SeesAgent), with their ids as in the full fold. The copy is for reading:
// its lookups by id (Learning, Decision) still find every row.
func AgentContinuity(v *vault.Vault, agent string) (*Continuity, error) {
	c, err := LoadContinuity(v)
	if err != nil || agent == "" || agent == v.Config.Agent {
		return c, err
	}
	st, _, err := heads.FoldedState(v)
	if err != nil {
		return nil, err
	}
	owner := make(map[string]string, len(st.Rows))
	for _, r := range st.Rows {
		owner[r.ID] = r.Agent
	}
	sees := func(event string) bool { return SeesAgent(v, agent, owner[event]) }
	cp := *c
	cp.Learnings = slices.DeleteFunc(slices.Clone(c.Learnings), func(l *Learning) bool { return !SeesAgent(v, agent, l.Agent) })
	cp.Decisions = slices.DeleteFunc(slices.Clone(c.Decisions), func(d *Decision) bool { return !SeesAgent(v, agent, d.Agent) })
	cp.Meta = slices.DeleteFunc(slices.Clone(c.Meta), func(m *MetaLearning) bool { return !sees(m.Event) })
	items := func(in []Item) []Item {
		return slices.DeleteFunc(slices.Clone(in), func(it Item) bool { return !sees(it.ID) })
	}
	cp.Next, cp.Done, cp.Blockers, cp.Commitments = items(c.Next), items(c.Done), items(c.Blockers), items(c.Commitments)
	return &cp, nil
}

// StatusFor is LoadContinuityStatus as agent is shown it: for another
// agent than the vault's, the live sections are read from CONTINUITY.md as
// that agent is shown it (AgentHeads), and the counts and the budget are
// of the rows it may see and of MEMORY.md as it is shown it.
func StatusFor(v *vault.Vault, agent string) (*ContinuityStatus, error) {
	if agent == "" || agent == v.Config.Agent {
		return LoadContinuityStatus(v)
	}
	c, err := AgentContinuity(v, agent)
	if err != nil {
		return nil, err
	}
	texts, err := AgentHeads(v, agent, vault.MemoryHead, vault.ContinuityHead)
	if err != nil {
		return nil, err
	}
	cfg, st, err := continuityConfigState(v)
	if err != nil {
		return nil, err
	}
	return statusOf(cfg, st, summarize(c, cfg, today(v)), texts[1], texts[0]), nil
}

// BudgetFor is ContinuityBudget as agent is shown it (StatusFor).
func BudgetFor(v *vault.Vault, agent string) ([]BudgetLine, error) {
	s, err := StatusFor(v, agent)
	if err != nil {
		return nil, err
	}
	return s.Budget, nil
}

// IndexFor is learnings-index.md as agent is shown it: the file for the
// vault's own agent (nil when there is none), else the index rendered from
// the learnings agent may see, within the same budget.
func IndexFor(v *vault.Vault, agent string) ([]byte, error) {
	if agent == "" || agent == v.Config.Agent {
		data, err := v.ReadFile(LearningsIndexFile)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fault.IO("read "+LearningsIndexFile, err)
		}
		return data, nil
	}
	c, err := AgentContinuity(v, agent)
	if err != nil {
		return nil, err
	}
	cfg, err := loadContinuityConfig(v)
	if err != nil {
		return nil, err
	}
	return renderLearningsIndex(c, cfg.Budgets["index"]), nil
}

// protocolIDRE finds the protocol's ids (L3, D2, M1) in an audit entry.
var protocolIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b[LDM][0-9]+\b`) })

// ScopedTo is the report as agent is shown it: an entry (an action, a
// flag, a ladder line, a blocker) is left out when any learning or decision
// it names, by its fields or in its text, was recorded by an agent agent
// may not see; Hidden counts them. The report of the vault's own agent is
// rep itself. c is the full fold the report was made from.
func (rep *AuditReport) ScopedTo(v *vault.Vault, agent string, c *Continuity) *AuditReport {
	if agent == "" || agent == v.Config.Agent {
		return rep
	}
	hidden := func(ids ...string) bool {
		for _, id := range ids {
			for _, m := range protocolIDRE().FindAllString(id, -1) {
				owner, known := "", false
				if l := c.Learning(m); l != nil {
					owner, known = l.Agent, true
				} else if d := c.Decision(m); d != nil {
					owner, known = d.Agent, true
				}
				if known && !SeesAgent(v, agent, owner) {
					return true
				}
			}
		}
		return false
	}
	out := *rep
	n := 0
	drop := func(h bool) bool {
		if h {
			n++
		}
		return h
	}
	out.Actions = slices.DeleteFunc(slices.Clone(rep.Actions), func(a AuditAction) bool { return drop(hidden(a.ID, a.By, a.Reason)) })
	out.Ladder = slices.DeleteFunc(slices.Clone(rep.Ladder), func(a AuditAction) bool { return drop(hidden(a.ID, a.By, a.Reason)) })
	out.Flags = slices.DeleteFunc(slices.Clone(rep.Flags), func(f AuditFlag) bool { return drop(hidden(f.ID, f.Reason)) })
	out.Blockers = slices.DeleteFunc(slices.Clone(rep.Blockers), func(b string) bool { return drop(hidden(b)) })
	out.Hidden = n
	return &out
}
