package vault

import (
	"path/filepath"
	"slices"
	"syscall"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// The write-time check. A full verification reads the whole history, which a
// writer cannot afford on every transaction. Instead the last verified state
// of each segment (size, mtime, inode and the tip hash at its end) is kept in
// .state/ledger-verified.bin; a writer re-checks only the segments whose
// stat no longer matches, which after a writer's own append is none. A hand
// edit changes the mtime (and, for editors that replace files, the inode), so
// it is caught by the next writer. The cache is derived: deleting it costs one
// full chain check. It is not a Derived view: what it keeps is per segment
// and checked line by line with hashes, not folded from appended events,
// but it is written in the same codec and framing (derived.go).

type segStamp struct {
	Path  string `json:"path"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime_ns"`
	Ino   uint64 `json:"ino"`
	Tip   string `json:"tip"` // the hash of the segment's last event (or the last before it)
}

// verifiedStamp is what the writers' check keeps per segment: its stamp
// and the ledger's open tips at the end of it.
type verifiedStamp struct {
	segStamp
	Tips []string
}

// verifiedFile is .state/<verifiedFile>.bin; bump verifiedVersion when
// its encoding changes.
const (
	verifiedFile    = "ledger-verified"
	verifiedVersion = 3 // 2: the open tips after each segment; 3: a failed check's problems
)

func stampOf(root string, s segment) (segStamp, error) {
	info, err := fileio.At(root).Stat(filepath.Join(root, filepath.FromSlash(s.String())))
	if err != nil {
		return segStamp{}, fault.IO("stat "+s.String(), err)
	}
	st := segStamp{Path: s.String(), Size: info.Size(), Mtime: info.ModTime().UnixNano()}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		st.Ino = sys.Ino
	}
	return st, nil
}

// verifiedCache is the writers' check as saved: the stamps, and when the
// check failed, its problems and the hash of HEAD's ledger tree they were
// found against. A vault in need of repair keeps refusing structured
// writes, but each transaction costs one stat per segment, not a re-read of
// the ledger from the bad line on, for as long as neither the segments nor
// the committed ledger change.
type verifiedCache struct {
	stamps   []verifiedStamp
	problems []Problem
	tree     string // HEAD's ledger tree when problems were found
}

func (v *Vault) loadStamps() verifiedCache {
	d, ok := readStateFile(v.Root, verifiedFile, verifiedVersion)
	if !ok {
		return verifiedCache{}
	}
	n := d.count()
	if d.bad || n == 0 {
		return verifiedCache{}
	}
	var c verifiedCache
	c.stamps = make([]verifiedStamp, n)
	for i := range c.stamps {
		c.stamps[i].segStamp = decodeStamp(d)
		c.stamps[i].Tips = make([]string, d.count())
		for j := range c.stamps[i].Tips {
			c.stamps[i].Tips[j] = d.str()
		}
	}
	c.problems = make([]Problem, d.count())
	for i := range c.problems {
		c.problems[i] = Problem{File: d.str(), Line: d.uv(), ID: d.str(), Msg: d.str()}
	}
	c.tree = d.str()
	if !d.done() {
		return verifiedCache{}
	}
	return c
}

// saveStamps writes the cache without fsync: lost, stale or torn, it only
// costs a re-check of the segments it no longer vouches for.
func (v *Vault) saveStamps(c verifiedCache) {
	writeStateFile(v.Root, verifiedFile, verifiedVersion, func(e *encoder) {
		e.int(len(c.stamps))
		for _, s := range c.stamps {
			encodeStamp(e, s.segStamp)
			e.int(len(s.Tips))
			for _, t := range s.Tips {
				e.str(t)
			}
		}
		e.int(len(c.problems))
		for _, p := range c.problems {
			e.str(p.File)
			e.int(p.Line)
			e.str(p.ID)
			e.str(p.Msg)
		}
		e.str(c.tree)
	})
}

// ledgerTree is the hash of the ledger folder HEAD commits ("" when none):
// what the committed-history part of a saved failed check depends on.
func (v *Vault) ledgerTree() string {
	tree, err := v.repo.TreeAt("")
	if err != nil || tree == nil {
		return ""
	}
	e, err := tree.FindEntry("ledger")
	if err != nil {
		return ""
	}
	return e.Hash.String()
}

// checkChain verifies the segments that changed since the last check and
// returns their stamps. A torn last line in the last segment is tolerated:
// the writer repairs it. Segments that changed are also held against what
// HEAD commits (committedProblems): a writer never commits a ledger that
// lost or changed a committed line.
func (v *Vault) checkChain(segs []segment) (stamps []verifiedStamp, problems []Problem, reread bool, err error) {
	cache := v.loadStamps()
	old := cache.stamps
	// A merge in progress is asked every time (one stat): it is over as
	// soon as git's commit is made, so it is never saved.
	merging := v.mergeInProgress()
	withMerge := func(ps []Problem) []Problem {
		if merging == nil {
			return ps
		}
		return append(slices.DeleteFunc(ps, func(p Problem) bool { return p.File == merging.File }), *merging)
	}
	if len(cache.problems) > 0 {
		// A saved failure holds while the segments and HEAD's ledger are
		// as they were; otherwise everything is checked again.
		if st, same := sameStamps(v.Root, segs, old); same && cache.tree == v.ledgerTree() {
			return st, withMerge(cache.problems), false, nil
		}
		old = nil
	}
	stamps = make([]verifiedStamp, 0, len(segs))
	cc := newChainChecker()
	trusted := true
	var changed []segment
	for i, s := range segs {
		ss, err := stampOf(v.Root, s)
		if err != nil {
			return nil, nil, false, err
		}
		st := verifiedStamp{segStamp: ss}
		if trusted && i < len(old) && old[i].Path == st.Path && old[i].Size == st.Size &&
			old[i].Mtime == st.Mtime && old[i].Ino == st.Ino {
			st.Tip, st.Tips = old[i].Tip, old[i].Tips
			stamps = append(stamps, st)
			continue
		}
		if trusted {
			trusted = false
			if i > 0 {
				cc.resume(stamps[i-1].Tips, v.hashesBefore(segs[:i]))
			}
		}
		reread = true
		changed = append(changed, s)
		lines, torn, err := readSegment(v.Root, s)
		if err != nil {
			return nil, nil, false, err
		}
		for _, ll := range lines {
			cc.line(ll)
		}
		if len(torn) > 0 && i < len(segs)-1 {
			cc.problems = append(cc.problems, Problem{File: s.String(), Line: len(lines) + 1,
				Msg: "unterminated line in a closed segment"})
		}
		st.Tip, st.Tips = cc.last, slices.Clone(cc.tips)
		stamps = append(stamps, st)
	}
	problems = cc.problems
	if reread || len(old) != len(segs) {
		cp, err := v.heldAgainst("", segs, changed, len(old) != len(segs), false, diskSegment(v.Root))
		if err != nil {
			return nil, nil, false, err
		}
		problems = append(problems, cp...)
	}
	return stamps, withMerge(problems), reread || len(old) != len(segs), nil
}

// sameStamps reports whether every segment is as old recorded it, and
// returns the stamps.
func sameStamps(root string, segs []segment, old []verifiedStamp) ([]verifiedStamp, bool) {
	if len(old) != len(segs) {
		return nil, false
	}
	for i, s := range segs {
		st, err := stampOf(root, s)
		if err != nil || old[i].Path != st.Path || old[i].Size != st.Size || old[i].Mtime != st.Mtime || old[i].Ino != st.Ino {
			return nil, false
		}
	}
	return old, true
}

// hashesBefore returns a lookup of the event hashes in segs, which read
// each segment only when a hash is not found in the ones read so far,
// newest first: a prev that names an event before the first changed
// segment (a merged clone's line of history) is found in the segments
// just before it.
func (v *Vault) hashesBefore(segs []segment) func(string) bool {
	known := make(map[string]struct{})
	next := len(segs) - 1
	return func(h string) bool {
		for {
			if _, ok := known[h]; ok {
				return true
			}
			if next < 0 {
				return false
			}
			lines, _, err := readSegment(v.Root, segs[next])
			next--
			if err != nil {
				continue
			}
			for _, ll := range lines {
				if ll.Event != nil {
					known[ll.Event.Hash] = struct{}{}
				}
			}
		}
	}
}
