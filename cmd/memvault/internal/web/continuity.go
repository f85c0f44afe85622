package web

import (
	"net/http"

	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/recall"
)

func (s *Server) continuity(*http.Request) (*view, error) {
	v, _, err := s.open(true)
	if err != nil {
		return nil, err
	}
	c, err := continuity.LoadContinuity(v)
	if err != nil {
		return nil, err
	}
	return &view{Page: "continuity", Title: "Continuity: learnings and decisions", Data: c}, nil
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
