package continuity

import (
	"strings"
	"sync"

	"github.com/memvault/memvault/vault"
)

// The audit at session start (docs/CONTINUITY.md, "The audit at session
// start"): its outcome as of today, kept in the derived state's summary,
// and the state a session start's readers share.

// auditOutcome is what the audit as of Day takes away from what a session
// is shown, before any of it is written: the events of the learnings it
// archives or invalidates and of the decisions it supersedes (Gone), and
// the flags it raises ("L3 LOW_CONFIDENCE"). It holds from Day until the
// day before Changes, when the clock alone changes it ("" never).
type auditOutcome struct {
	Day, Changes string
	Gone         []string
	Flags        []string
	gone         map[string]bool
	flags        map[string][]string
}

// outcomeOf is the outcome of an audit of c.
func outcomeOf(c *Continuity, rep *AuditReport) *auditOutcome {
	o := &auditOutcome{Day: rep.Now, Changes: rep.changes, Gone: []string{}, Flags: rep.flagStrings()}
	for _, a := range rep.Actions {
		switch a.Action {
		case "archive", "invalidate":
			o.Gone = append(o.Gone, c.Learning(a.ID).Event)
		case "reinforce":
			o.Gone = append(o.Gone, c.Learning(a.By).Event)
		case "supersede":
			o.Gone = append(o.Gone, c.Decision(a.ID).Event)
		}
	}
	return o.index()
}

// index builds the lookups of an outcome read back.
func (o *auditOutcome) index() *auditOutcome {
	o.gone, o.flags = map[string]bool{}, map[string][]string{}
	if o.Gone == nil {
		o.Gone = []string{}
	}
	if o.Flags == nil {
		o.Flags = []string{}
	}
	for _, e := range o.Gone {
		o.gone[e] = true
	}
	for _, f := range o.Flags {
		id, flag, _ := strings.Cut(f, " ")
		o.flags[id] = append(o.flags[id], flag)
	}
	return o
}

// holds reports whether the outcome is the audit's as of day.
func (o *auditOutcome) holds(day string) bool {
	return o != nil && o.Day <= day && (o.Changes == "" || day < o.Changes)
}

// Takes reports whether the audit takes the row recorded by event away.
func (o *auditOutcome) Takes(event string) bool { return o != nil && o.gone[event] }

// today is the day a reader applies the audit as of: the vault's clock.
func today(v *vault.Vault) string { return v.Now().UTC().Format(dateLayout) }

// sessionMemo keeps, per open vault, the protocol's state a session
// start's readers opened (AgentHeads, then ContinuityAtSessionStartFor),
// so that the second does not open it again: valid while the ledger's
// segments have the same stamps and the day is the same.
type sessionMemo struct {
	mu     sync.Mutex
	stamps []vault.SegStamp
	day    string
	cfg    ContinuityConfig
	st     *contState
}

type sessionMemoKey struct{}

// withSessionState runs fn with the protocol's config and state, the
// summary for today computed and saved when it had to be, holding the
// memo's lock while fn runs (the state is not safe for concurrent use).
func withSessionState(v *vault.Vault, fn func(cfg ContinuityConfig, st *contState) error) error {
	m := v.Slot(sessionMemoKey{}, func() any { return &sessionMemo{} }).(*sessionMemo)
	m.mu.Lock()
	defer m.mu.Unlock()
	_, stamps, serr := v.SegmentStamps()
	day := today(v)
	if serr != nil || m.st == nil || m.day != day || !sameStamps(m.stamps, stamps) {
		cfg, st, err := continuityConfigState(v)
		if err != nil {
			m.st = nil
			return err
		}
		if _, err := st.summary(cfg); err != nil {
			m.st = nil
			return err
		}
		st.saveIfDirty(cfg)
		m.stamps, m.day, m.cfg, m.st = stamps, day, cfg, st
		if serr != nil || len(stamps) == 0 {
			m.st = nil // nothing to key it by: not kept
			return fn(cfg, st)
		}
	}
	return fn(m.cfg, m.st)
}

func sameStamps(a, b []vault.SegStamp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Path != b[i].Path || a[i].Size != b[i].Size || a[i].Mtime != b[i].Mtime || a[i].Ino != b[i].Ino {
			return false
		}
	}
	return true
}
