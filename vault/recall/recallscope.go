package recall

import (
	"strings"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/heads"
	"github.com/memvault/memvault/vault/scope"
)

// What a recall may search: the threads in scope, the time a hit must
// fall in, and the heads too far behind the ledger to be searched.

// recallScope decides which threads are searched: "" (global rows) always;
// all threads with AllThreads; else the current thread, the threads linked
// to it by a link event, and any thread whose alias the query names. It
// returns the current thread too when it came from the working directory.
func recallScope(v *vault.Vault, sc *scope.Scope, q string, opts *RecallOptions) (allowed map[string]bool, searched []string, dirThread string, err error) {
	if opts.Thread != "" {
		th, err := vault.ParseThread(opts.Thread)
		if err != nil {
			return nil, nil, "", err
		}
		opts.Thread = th.String()
		if !scope.KnowsThread(v, sc, th) {
			e := fault.New(vault.ErrNotFound, "recall: thread %q: unknown", opts.Thread)
			return nil, nil, "", e.WithHint("threads the ledger knows: %s", strings.Join(sc.Threads(), ", "))
		}
	} else if opts.Session != "" && !opts.AllThreads {
		if ts := sc.SessionThreads(opts.Agent, opts.Session); len(ts) == 1 {
			opts.Thread = ts[0]
		}
	}
	if opts.AllThreads {
		return nil, []string{"*"}, "", nil
	}
	if opts.Thread == "" && opts.Dir != "" {
		if t, known := scope.WorkThreadIn(v, sc, opts.Dir); known {
			opts.Thread, dirThread = t, t
		}
	}
	allowed = map[string]bool{"": true}
	if opts.Thread != "" {
		allowed[opts.Thread] = true
		for _, t := range sc.Linked(opts.Thread) {
			allowed[t] = true
		}
	}
	for key, t := range v.Config.Threads {
		for _, a := range t.Aliases {
			if scope.MentionsAlias(q, a) {
				allowed[key] = true
			}
		}
	}
	return allowed, vault.SortedKeys(allowed), dirThread, nil
}

// inScope applies the thread scope to a hit. A transcript message takes the
// threads of its session; a session without a thread is global.
func inScope(v *vault.Vault, sc *scope.Scope, h Hit, allowed map[string]bool) bool {
	if allowed == nil {
		return true
	}
	if h.Tier == TierTranscripts {
		threads := sc.SessionThreads(h.Agent, h.Session)
		if len(threads) == 0 {
			return true
		}
		for _, t := range threads {
			if allowed[t] {
				return true
			}
		}
		return false
	}
	return allowed[h.Thread]
}

func inTime(ts string, since, until time.Time) bool {
	if since.IsZero() && until.IsZero() {
		return true
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return false
	}
	return (since.IsZero() || !t.Before(since)) && (until.IsZero() || t.Before(until))
}

// staleHeads answers, for recall, whether a head file lags the ledger: a
// row or a correction reached it since its last render, so its text may
// show what no longer holds. Its hits are left out (the structured tier
// has the rows themselves); the view is loaded only when a head matches.
type staleHeads struct {
	vw     *heads.HeadView
	failed bool
	seen   map[string]bool
	left   []string
}

func (s *staleHeads) behind(v *vault.Vault, head string) bool {
	if s.vw == nil && !s.failed {
		cfg, err := heads.LoadHeadsConfig(v)
		if err == nil {
			s.vw, err = heads.HeadViewOf(v, cfg, false)
		}
		s.failed = err != nil
	}
	t, ok := heads.TargetOf(head)
	if s.vw == nil || !ok || head == vault.ContinuityHead || s.vw.Heads[head] == nil || s.vw.Heads[head].LastRendered == nil ||
		!s.vw.Stale(head, t.Thread) {
		return false // a file never rendered is all hand-written: nothing in it lags
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if !s.seen[head] {
		s.seen[head] = true
		s.left = append(s.left, head)
	}
	return true
}
