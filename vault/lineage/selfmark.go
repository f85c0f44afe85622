package lineage

// The cadence job's mark (.state/cadence-<agent>.json, derived): how far
// it read the ledger for the agent's self-summaries, so that a session end
// with nothing due reads only the events appended since, not the whole
// ledger. Lost, stale or not continued by the ledger (a repair, a merge),
// the mark is rebuilt from a full read; it can only make the job look
// again, never skip a window: whatever it says, the windows are cut from
// the whole ledger inside the job's transaction.

import (
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/memvault/memvault/vault"
)

// selfMark is what the last look found after the last window.
type selfMark struct {
	Stamps  []vault.SegStamp `json:"stamps"`
	Tip     string           `json:"tip"`
	Pending int              `json:"pending"`  // memory events after the last window
	LastDay string           `json:"last_day"` // the UTC day of the last of them
}

func markPath(v *vault.Vault, agent string) string {
	return filepath.Join(v.Root, ".state", "cadence-"+agent+".json")
}

// selfDue reports whether a self-summary of agent may be due at now: from
// the mark and the events appended since it, else from the whole ledger.
// It saves the mark it ends with.
func selfDue(v *vault.Vault, agent string, now time.Time) (bool, error) {
	segs, stamps, err := v.SegmentStamps()
	if err != nil {
		return false, err
	}
	tip := v.TipOf(segs)
	var m selfMark
	if data, err := v.Files().ReadFile(markPath(v, agent)); err == nil && json.Unmarshal(data, &m) == nil &&
		len(m.Stamps) > 0 && vault.StampsContinue(m.Stamps, stamps) {
		due := false
		newTip, _, ok := v.AppendedSince(segs, stamps, m.Stamps, m.Tip, func(ev *vault.Event) bool {
			if !selfCounted(&vault.Row{Event: ev}, agent) {
				return true
			}
			day := ev.Time().UTC().Format("2006-01-02")
			if m.Pending > 0 && day != m.LastDay {
				due = true
			}
			m.Pending, m.LastDay = m.Pending+1, day
			if m.Pending >= SelfSummaryEvery {
				due = true
			}
			return true
		})
		if ok {
			due = due || m.Pending > 0 && dayClosed(m.LastDay, now)
			m.Stamps, m.Tip = stamps, newTip
			saveMark(v, agent, m, due)
			return due, nil
		}
	}
	st, err := v.LoadState()
	if err != nil {
		return false, err
	}
	last := lastSelfSummary(st, agent)
	windows, rest := cutWindows(st, agent, now, last)
	m = selfMark{Stamps: stamps, Tip: tip, Pending: len(rest)}
	if len(rest) > 0 {
		m.LastDay = dayOf(rest[len(rest)-1])
	}
	due := len(windows) > 0
	saveMark(v, agent, m, due)
	return due, nil
}

// saveMark keeps m, unless a self-summary is due: the job writes it and
// the next look reads the whole ledger once.
func saveMark(v *vault.Vault, agent string, m selfMark, due bool) {
	if due {
		_ = v.Files().Remove(markPath(v, agent))
		return
	}
	if data, err := json.Marshal(m); err == nil {
		_ = v.Files().WriteCache(markPath(v, agent), data)
	}
}

func dayClosed(day string, now time.Time) bool {
	t, err := time.Parse("2006-01-02", day)
	return err == nil && !now.Before(t.AddDate(0, 0, 1))
}
