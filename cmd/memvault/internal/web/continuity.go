package web

import (
	"net/http"
	"slices"

	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/recall"
)

// continuityList is how many decisions and learnings the page shows, the
// newest: a vault in use for months holds thousands, which `memvault
// continuity decisions` and `learnings` list whole.
const continuityList = 200

// continuityData is the working memory's decisions and learnings, the
// newest continuityList of each, newest first, and how many are left out.
type continuityData struct {
	Goal, Phase                 string
	Decisions                   []*continuity.Decision
	Learnings                   []*continuity.Learning
	MoreDecisions, MoreLearning int
}

func (s *Server) continuity(*http.Request) (*view, error) {
	v, _, err := s.open(true)
	if err != nil {
		return nil, err
	}
	c, err := continuity.LoadContinuity(v)
	if err != nil {
		return nil, err
	}
	d := &continuityData{Goal: c.Goal, Phase: c.Phase}
	d.Decisions, d.MoreDecisions = newest(c.Decisions)
	d.Learnings, d.MoreLearning = newest(c.Learnings)
	return &view{Page: "continuity", Title: "Continuity: learnings and decisions", Data: d}, nil
}

// newest is the last continuityList items of list, newest first, and how
// many it leaves out.
func newest[T any](list []T) ([]T, int) {
	from := max(0, len(list)-continuityList)
	out := slices.Clone(list[from:])
	slices.Reverse(out)
	return out, from
}

// recallData is a query and its hits, tier by tier, as `memvault recall
// --all-threads` finds them.
type recallData struct {
	Query, Thread string
	Result        *recall.RecallResult
}

func (s *Server) recall(r *http.Request) (*view, error) {
	q := r.URL.Query()
	d := &recallData{Query: trimmed(q.Get("q")), Thread: q.Get("thread")}
	if d.Query == "" {
		return &view{Page: "recall", Title: "Recall", Data: d}, nil
	}
	v, agent, err := s.open(true)
	if err != nil {
		return nil, err
	}
	// A person reviewing the vault works in no folder: every thread is
	// searched unless the page names one.
	opts := recall.RecallOptions{Query: d.Query, Agent: agent, Thread: d.Thread, AllThreads: d.Thread == ""}
	if d.Result, err = recall.Recall(v, opts); err != nil {
		return nil, err
	}
	return &view{Page: "recall", Title: "Recall: " + d.Query, Data: d}, nil
}
