package vault

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/gitrepo"
)

// Committed history is authoritative. A ledger segment may only grow past
// what HEAD holds: a writer appends, then commits. A segment that lost a
// committed line (a truncated tail), holds another line for a committed
// event (a forged one, its hash recomputed), or gained lines before
// committed ones fails the check, which Verify runs on every segment and
// each writer on the segments that changed since its last check. The
// events are named, so a person can restore them (git checkout, or
// memvault repair, which takes them from HEAD).

// mergeHeadFile names, as a problem's file, a git merge in progress.
const mergeHeadFile = ".git/MERGE_HEAD"

// MergeInProgress says whether the vault is in the middle of a git merge
// (MERGE_HEAD names a commit HEAD does not have as a parent yet). Its
// files are then neither side's: a repair cannot take HEAD's lines as the
// only committed ones, and stages what it writes for the merge's commit
// instead of committing it.
func (v *Vault) MergeInProgress() bool { return v.mergeInProgress() != nil }

// mergeInProgress is the problem a vault in the middle of a git merge has:
// its files are neither side's, so nothing is written until the merge is
// concluded.
func (v *Vault) mergeInProgress() *Problem {
	data, err := os.ReadFile(filepath.Join(v.Root, ".git", "MERGE_HEAD"))
	if err != nil {
		return nil
	}
	// git's post-merge hook runs after the merge commit and before git
	// removes MERGE_HEAD: that merge is over.
	if h := strings.TrimSpace(string(data)); len(h) == 40 && v.Repo.HeadHasParent(plumbing.NewHash(h)) {
		return nil
	}
	return &Problem{File: mergeHeadFile, Msg: "a git merge is in progress: conclude it with git commit (or undo it with git merge --abort) before memvault writes events"}
}

// committedSegment is a ledger segment as a commit holds it.
type committedSegment struct{ path, blob string }

// committedLedger lists the segments the commit rev ("" = HEAD) holds,
// in tree order, reading trees only (Files would read every blob); none
// when it commits no ledger.
func (v *Vault) committedLedger(rev string) ([]committedSegment, error) {
	tree, err := v.Repo.TreeAt(rev)
	if err != nil || tree == nil {
		return nil, err
	}
	lt, err := tree.Tree("ledger")
	if err != nil {
		return nil, nil // nothing committed under ledger/ yet
	}
	w := object.NewTreeWalker(lt, true, nil)
	defer w.Close()
	var out []committedSegment
	for {
		name, e, err := w.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if e.Mode.IsFile() && strings.HasSuffix(name, ".jsonl") {
			out = append(out, committedSegment{"ledger/" + name, e.Hash.String()})
		}
	}
}

// ledgerBlobs maps each segment the commit rev holds to its blob hash.
func (v *Vault) ledgerBlobs(rev string) (map[string]string, error) {
	cs, err := v.committedLedger(rev)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(cs))
	for _, c := range cs {
		m[c.path] = c.blob
	}
	return m, nil
}

// heldAgainst holds segments against the commit rev ("" = HEAD). With
// anyOrder, committed lines need only be present, not a prefix: a merge
// interleaves two histories. blobs, when not nil, has the git blob hash of
// segments as read already (Verify's walk hashed them), so that a segment
// equal to its committed blob is not read again.
func (v *Vault) heldAgainst(rev string, segs, changed []Segment, all, anyOrder bool, read func(Segment) ([]byte, error), blobs map[string]string) ([]Problem, error) {
	var want []committedSegment
	if all {
		var err error
		if want, err = v.committedLedger(rev); err != nil {
			return nil, err
		}
	} else {
		tree, err := v.Repo.TreeAt(rev)
		if err != nil || tree == nil {
			return nil, err
		}
		for _, s := range changed {
			e, err := tree.FindEntry(s.String())
			if err == nil {
				want = append(want, committedSegment{s.String(), e.Hash.String()})
			}
		}
	}
	onDisk := make(map[string]Segment, len(segs))
	for _, s := range segs {
		onDisk[s.String()] = s
	}
	var out []Problem
	for _, c := range want {
		s, ok := onDisk[c.path]
		if !ok {
			out = append(out, missingSegment(c.path))
			continue
		}
		if b, ok := blobs[c.path]; ok && b == c.blob {
			continue
		}
		data, err := read(s)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, err
		}
		if gitrepo.BlobHash(data) == c.blob {
			continue
		}
		head, ok := v.Repo.Blob(c.blob)
		if !ok {
			continue // pruned or unreadable: git fsck reports it
		}
		out = append(out, compareCommitted(s, head, data, anyOrder)...)
	}
	return out, nil
}

// missingSegment is the problem of a committed segment gone from disk.
func missingSegment(path string) Problem {
	return Problem{File: path, Msg: "a committed segment is missing: restore it with memvault repair (or git checkout HEAD -- " + path + ")"}
}

// compareCommitted names what data lost or changed of head, the committed
// bytes of segment s; nothing when data only appends to head. A committed
// line that fails its own hash (committed with --force or --no-verify)
// protects nothing: a line for the same event whose hash checks may take
// its place, which is how a forced damage is repaired.
func compareCommitted(s Segment, head, data []byte, anyOrder bool) []Problem {
	if bytes.HasPrefix(data, head) {
		return nil
	}
	if len(head) == len(data)+1 && bytes.HasPrefix(head, data) && head[len(data)] == '\n' {
		return nil // only the last newline is gone: the next writer puts it back
	}
	headLines, _, _ := splitSegment(s, head)
	lines, _, _ := splitSegment(s, data)
	present := make(map[string]int, len(lines))
	byID := make(map[string]ledgerLine, len(lines))
	for _, ll := range lines {
		present[string(ll.Raw)] = ll.Line
		if ll.Event != nil {
			if _, dup := byID[ll.Event.ID]; !dup {
				byID[ll.Event.ID] = ll
			}
		}
	}
	// replaces reports whether disk line d may stand for committed line h.
	replaces := func(h, d ledgerLine) bool {
		return bytes.Equal(h.Raw, d.Raw) ||
			!h.HashOK && h.Event != nil && d.Event != nil && d.HashOK && d.Event.ID == h.Event.ID
	}
	var out []Problem
	for _, hl := range headLines {
		if _, ok := present[string(hl.Raw)]; ok {
			continue
		}
		id := ""
		if hl.Event != nil {
			id = hl.Event.ID
		}
		d, ok := byID[id]
		switch {
		case ok && id != "" && replaces(hl, d):
			continue
		case ok && id != "":
			out = append(out, Problem{File: s.String(), Line: d.Line, ID: id,
				Msg: "this event differs from the committed one (HEAD's line " + fmt.Sprint(hl.Line) + "): changed after it was committed"})
		default:
			out = append(out, Problem{File: s.String(), Line: hl.Line, ID: id,
				Msg: "a committed event is missing (HEAD has it at this line): restore it with memvault repair"})
		}
	}
	if len(out) == 0 && !anyOrder {
		// Every committed line is there: they must come first, in order.
		for i, hl := range headLines {
			if i >= len(lines) || !replaces(hl, lines[i]) {
				out = append(out, Problem{File: s.String(), Line: i + 1,
					Msg: "lines were inserted or moved before committed lines (HEAD's line " + fmt.Sprint(hl.Line) + " is now line " + fmt.Sprint(present[string(hl.Raw)]) + ")"})
				break
			}
		}
	}
	return out
}

// VerifyStaged verifies the ledger as it is staged for the next commit
// (the vault's pre-commit hook runs it): the chain of the staged segments,
// and that they keep every line HEAD commits — and, while a merge is being
// concluded, every line of the commit being merged, in any order. So a
// forged line staged and then restored in the work tree is refused. Links
// are problems as in Verify.
func (v *Vault) VerifyStaged() (*VerifyReport, error) { return v.withLinks(v.verifyStaged) }

func (v *Vault) verifyStaged() (*VerifyReport, error) {
	staged, err := v.Repo.Staged("ledger/")
	if err != nil {
		return nil, err
	}
	var segs []Segment
	var strays []string
	var conflicted []Problem
	for p, blob := range staged {
		s, ok := SegmentFromPath(p)
		switch {
		case !ok:
			strays = append(strays, p)
		case blob == "":
			conflicted = append(conflicted, Problem{File: p, Msg: "staged with a merge conflict: resolve it (memvault repair resolves a ledger segment)"})
		default:
			segs = append(segs, s)
		}
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].Less(segs[j]) })
	read := func(s Segment) ([]byte, error) {
		data, ok := v.Repo.Blob(staged[s.String()])
		if !ok {
			return nil, fault.New(ErrCorrupt, "%s: the staged blob cannot be read", s)
		}
		return data, nil
	}
	merging := v.mergeInProgress() != nil
	rep, err := v.verifyWith(segs, strays, read, false, func(blobs map[string]string) ([]Problem, error) {
		out, err := v.heldAgainst("", segs, nil, true, merging, read, blobs)
		if err != nil || !merging {
			return out, err
		}
		mh, err := os.ReadFile(filepath.Join(v.Root, ".git", "MERGE_HEAD"))
		if err != nil {
			return out, nil
		}
		theirs, err := v.heldAgainst(strings.TrimSpace(string(mh)), segs, nil, true, true, read, blobs)
		return append(out, theirs...), err
	}, nil)
	if err != nil {
		return nil, err
	}
	rep.Problems = append(rep.Problems, conflicted...)
	sortProblems(rep.Problems)
	rep.OK = len(rep.Problems) == 0
	return rep, nil
}
