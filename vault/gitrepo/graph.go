package gitrepo

// The commit graph as a sync needs it: how far two commits are apart, and
// where their histories meet.

import (
	"container/heap"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Divergence is how two commits' histories relate.
type Divergence struct {
	OnlyA, OnlyB int             // commits reachable from one and not the other
	Bases        []plumbing.Hash // best common ancestors, newest first; none for unrelated histories
}

// Diverge compares commits a and b of the vault's repository; a zero hash
// is an unborn branch, which has no commits.
func (r *Repo) Diverge(a, b plumbing.Hash) (Divergence, error) {
	var err error
	var d Divergence
	switch {
	case a.IsZero():
		d.OnlyB, err = r.CountCommits(b)
	case b.IsZero():
		d.OnlyA, err = r.CountCommits(a)
	default:
		d, err = diverge(r.st, a, b)
	}
	return d, err
}

// isAncestor reports whether anc is reachable from desc (or is desc).
func isAncestor(st storer.EncodedObjectStorer, anc, desc plumbing.Hash) (bool, error) {
	if anc == desc {
		return true, nil
	}
	d, err := diverge(st, anc, desc)
	return err == nil && d.OnlyA == 0, err
}

const (
	fromA = 1 << iota
	fromB
	stale // below a common ancestor already found
)

// diverge walks back from a and b at once, newest commit first, marking
// each commit with the sides it is reachable from, the way git finds merge
// bases (paint_down_to_common): a commit reached from both that is not
// below another such commit is a best common ancestor, and the walk stops
// once everything left to visit lies below one. It visits the commits
// since the fork, not the whole history. Like git's, it trusts commit
// times to order the walk; with clocks far apart the counts can be off,
// never the merge, which the caller bases on Bases.
func diverge(st storer.EncodedObjectStorer, a, b plumbing.Hash) (Divergence, error) {
	if a == b {
		return Divergence{Bases: []plumbing.Hash{a}}, nil
	}
	flags := map[plumbing.Hash]int{}
	seen := map[plumbing.Hash]time.Time{} // commit times of the commits popped
	q := &commitQueue{}
	push := func(h plumbing.Hash, f int) error {
		c, err := object.GetCommit(st, h)
		if err != nil {
			return fmt.Errorf("git: read commit %s: %w", h, err)
		}
		heap.Push(q, c)
		flags[h] |= f
		return nil
	}
	if err := push(a, fromA); err != nil {
		return Divergence{}, err
	}
	if err := push(b, fromB); err != nil {
		return Divergence{}, err
	}
	var d Divergence
	for q.Len() > 0 {
		// git stops once everything left lies below a common ancestor.
		// Commits made in the same second tie, and a tie can be popped
		// before its child and marked from one side only; so the walk
		// goes on while a queued commit is as new as the oldest commit
		// marked from one side, which it may still correct.
		if q.allStale(flags) {
			oldest, ok := oldestOneSided(flags, seen)
			if !ok || (*q)[0].Committer.When.Before(oldest) {
				break
			}
		}
		c := heap.Pop(q).(*object.Commit)
		seen[c.Hash] = c.Committer.When
		f := flags[c.Hash]
		if f&(fromA|fromB) == fromA|fromB && f&stale == 0 {
			d.Bases = append(d.Bases, c.Hash)
			f |= stale
			flags[c.Hash] = f
		}
		for _, p := range c.ParentHashes {
			if nf := flags[p] | f; nf != flags[p] {
				if err := push(p, f); err != nil {
					return Divergence{}, err
				}
			}
		}
	}
	for _, f := range flags {
		switch f & (fromA | fromB) {
		case fromA:
			d.OnlyA++
		case fromB:
			d.OnlyB++
		}
	}
	return d, nil
}

// oldestOneSided returns the time of the oldest popped commit that is
// marked from one side only.
func oldestOneSided(flags map[plumbing.Hash]int, seen map[plumbing.Hash]time.Time) (time.Time, bool) {
	var oldest time.Time
	found := false
	for h, when := range seen {
		if f := flags[h] & (fromA | fromB); f != fromA|fromB && (!found || when.Before(oldest)) {
			oldest, found = when, true
		}
	}
	return oldest, found
}

// commitQueue orders commits newest first.
type commitQueue []*object.Commit

func (q commitQueue) Len() int { return len(q) }
func (q commitQueue) Less(i, j int) bool {
	return q[i].Committer.When.After(q[j].Committer.When)
}
func (q commitQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)   { *q = append(*q, x.(*object.Commit)) }
func (q *commitQueue) Pop() any {
	old := *q
	c := old[len(old)-1]
	*q = old[:len(old)-1]
	return c
}

func (q commitQueue) allStale(flags map[plumbing.Hash]int) bool {
	for _, c := range q {
		if flags[c.Hash]&stale == 0 {
			return false
		}
	}
	return true
}

// CountCommits counts the commits reachable from h: what a push to an
// empty remote sends.
func (r *Repo) CountCommits(h plumbing.Hash) (int, error) {
	if h.IsZero() {
		return 0, nil
	}
	seen := map[plumbing.Hash]bool{h: true}
	todo := []plumbing.Hash{h}
	for len(todo) > 0 {
		c, err := object.GetCommit(r.st, todo[len(todo)-1])
		todo = todo[:len(todo)-1]
		if err != nil {
			return 0, fmt.Errorf("git: read commit: %w", err)
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				todo = append(todo, p)
			}
		}
	}
	return len(seen), nil
}

// HeadHasParent reports whether the branch's commit has h among its
// parents: after `git merge` made its commit, and before git removes
// MERGE_HEAD (its post-merge hook runs in between), the merge is over.
func (r *Repo) HeadHasParent(h plumbing.Hash) bool {
	head, err := r.Head()
	if err != nil || head.IsZero() {
		return false
	}
	c, err := object.GetCommit(r.st, head)
	if err != nil {
		return false
	}
	for _, p := range c.ParentHashes {
		if p == h {
			return true
		}
	}
	return false
}
