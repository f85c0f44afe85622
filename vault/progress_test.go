package vault

import (
	"fmt"
	"testing"
)

// stepLog records what long work reports, in order.
type stepLog struct{ steps []Step }

func (l *stepLog) record(s Step) { l.steps = append(l.steps, s) }

// last is the last step of phase; ok is false when the phase never came.
func (l *stepLog) last(phase string) (Step, bool) {
	for i := len(l.steps) - 1; i >= 0; i-- {
		if l.steps[i].Phase == phase {
			return l.steps[i], true
		}
	}
	return Step{}, false
}

// checkCounts fails when a phase's count goes backwards or past its total:
// a renderer would draw 120% or a bar running back.
func (l *stepLog) checkCounts(t *testing.T) {
	t.Helper()
	done := map[string]int64{}
	for _, s := range l.steps {
		if s.Done < done[s.Phase] {
			t.Errorf("%s: count went back from %d to %d", s.Phase, done[s.Phase], s.Done)
		}
		if s.Total > 0 && s.Done > s.Total {
			t.Errorf("%s: %d of %d", s.Phase, s.Done, s.Total)
		}
		done[s.Phase] = s.Done
	}
}

// TestLongWorkReportsProgress: verify reports
// counts that end at their totals; without a Progress nothing is called.
func TestLongWorkReportsProgress(t *testing.T) {
	t.Parallel()
	v := newVault(t)
	for i := range 12 {
		remember(t, v, fmt.Sprintf("fact %d", i))
	}
	var log stepLog
	v.Progress = log.record

	vr := mustVerify(t, v)
	s, ok := log.last("verify: checking the ledger")
	if !ok || s.Done != int64(vr.Segments) || s.Total != int64(vr.Segments) {
		t.Errorf("verify: last step %+v, %d segments", s, vr.Segments)
	}

	log.checkCounts(t)

	v.Progress = nil
	n := len(log.steps)
	mustVerify(t, v)
	if len(log.steps) != n {
		t.Errorf("without a Progress, %d steps were still reported", len(log.steps)-n)
	}
}
