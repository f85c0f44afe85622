package vault

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/waiting"
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

// Committed history only grows. A commit made with `git commit
// --no-verify` skips the vault's pre-commit hook, so each check holds the
// commits made since the last one it trusted (gitrepo.FollowGrowth, along
// the first-parent line): every segment keeps the lines it had, in order
// (at a merge: both parents' lines, in any order), and the lines a commit
// adds chain onto an open tip and pass the policy; so do the lines the
// work tree holds beyond HEAD. A commit that fails stays untrusted, later
// commits are held to the last trusted one, and `git revert` of the bad
// commit makes the history sound again.

// trustSlot keeps, per open vault, the commit the last history check
// trusted, the open tips there and what it noted, for the save that
// follows (saveStamps) and the report (VerifyReport.Notes).
type trustSlot struct{}

type trusted struct {
	mu     sync.Mutex
	commit string
	tips   []string
	notes  int
}

func (v *Vault) trustSlot() *trusted {
	return v.Slot(trustSlot{}, func() any { return new(trusted) }).(*trusted)
}

// trust keeps what a history check trusted.
func (v *Vault) trust(commit string, tips []string, notes int) {
	t := v.trustSlot()
	t.mu.Lock()
	t.commit, t.tips, t.notes = commit, tips, notes
	t.mu.Unlock()
}

// trustedAfter is the trusted commit and tips a save of c records: the
// last history check's, or HEAD when a clean c follows the one commit a
// writer made on top of it.
func (v *Vault) trustedAfter(c verifiedCache) (string, []string) {
	t := v.trustSlot()
	t.mu.Lock()
	commit, tips := t.commit, t.tips
	t.mu.Unlock()
	if _, err := v.Files().Stat(filepath.Join(v.Root, filepath.FromSlash(waiting.File))); err == nil {
		return commit, tips // lines wait for a commit (TxOptions.Defer): the disk's tips are not HEAD's
	}
	if head, parent := v.Repo.HeadAndParent(); len(c.problems) == 0 && len(c.stamps) > 0 && head != commit && parent == commit && commit != "" {
		return head, c.stamps[len(c.stamps)-1].Tips
	}
	return commit, tips
}

// historyCheck is one walk of the history: the open tips and the policy
// after the last commit that held, and what the commit judged last found.
type historyCheck struct {
	tips     []string
	pol      *Policy
	notes    int // events before any policy event that the default refuses
	problems []Problem
	culprit  string // the first commit that failed since the last that held
	held     bool   // the last commit judged held
	// damage marks a commit with a line that fails its own hash: not
	// trusted, not a forgery (the chain check names the line).
	damage bool
}

// holdHistory holds the commits after c.commit (with the open tips c.tips
// there) to HEAD, then the segments of changed as the work tree holds
// them to HEAD, and keeps what it trusts for saveStamps.
func (v *Vault) holdHistory(c verifiedCache, changed []Segment) ([]Problem, error) {
	h := &historyCheck{tips: c.tips, pol: DefaultPolicy(), held: true}
	if c.commit != "" {
		p, err := v.LoadPolicy()
		if err != nil {
			return nil, err
		}
		h.pol = &Policy{Rules: maps.Clone(p.Rules), Events: p.Events}
	}
	walk, err := v.Repo.FollowGrowth(c.commit, "ledger", h.commit)
	if err != nil {
		return nil, err
	}
	tips := slices.Clone(h.tips)
	defer func() { v.trust(walk.Trusted, tips, h.notes) }()
	if n := len(walk.Failed); n > 0 && walk.Failed[n-1] == walk.Head {
		return h.problems, nil // the last commit fails (an earlier bad one that was undone does not count)
	}
	wt := gitrepo.GrowthCommit{Hash: "the work tree"}
	for _, s := range changed {
		now, err := v.Files().ReadFile(v.SegPath(s))
		if err != nil {
			continue // gone: heldAgainst names it
		}
		now = now[:bytes.LastIndexByte(now, '\n')+1] // a torn last line is the next writer's
		var was []byte
		if b, ok, err := v.Repo.BlobAt("", s.String()); err == nil && ok {
			if b == gitrepo.BlobHash(now) {
				continue
			}
			was, _ = v.Repo.Blob(b)
		}
		if len(now) > len(was) && bytes.HasPrefix(now, was) { // otherwise heldAgainst names what changed
			wt.Files = append(wt.Files, gitrepo.GrowthFile{Path: s.String(), Was: [][]byte{was}, Now: now})
		}
	}
	h.problems = nil
	if len(wt.Files) > 0 {
		h.commit(wt)
	}
	return h.problems, nil
}

// commit judges one commit of the walk (or the work tree).
func (h *historyCheck) commit(gc gitrepo.GrowthCommit) bool {
	if h.held {
		h.culprit = gc.Hash
		if len(gc.Hash) == 40 {
			h.culprit = "commit " + gc.Hash[:12]
		}
	}
	tips, pol := slices.Clone(h.tips), *h.pol
	pol.Rules = maps.Clone(pol.Rules)
	h.problems = nil
	var fresh []ledgerLine
	merged := map[*Event]bool{}
	for _, f := range gc.Files {
		s, ok := SegmentFromPath(f.Path)
		switch {
		case !ok:
			continue
		case f.Now == nil:
			h.bad(Problem{File: f.Path}, "deleted this committed segment")
			continue
		}
		if len(f.Was) == 1 && bytes.HasPrefix(f.Now, f.Was[0]) {
			lines, _, _ := splitSegment(s, f.Now[len(f.Was[0]):])
			n := bytes.Count(f.Was[0], []byte{'\n'})
			for i := range lines {
				lines[i].Line += n
			}
			fresh = append(fresh, lines...)
			continue
		}
		fresh = append(fresh, h.unordered(s, f, gc.AnyOrder, merged)...)
	}
	slices.SortStableFunc(fresh, func(a, b ledgerLine) int { // chain order: "22" before "22-1"
		x, y := a.Seg, b.Seg
		return cmp.Or(cmp.Compare(x.Y, y.Y), cmp.Compare(x.M, y.M), cmp.Compare(x.D, y.D), cmp.Compare(x.N, y.N))
	})
	for _, l := range fresh {
		if l.Event != nil && merged[l.Event] {
			h.link(l.Event)
		} else {
			h.added(l)
		}
	}
	h.held = len(h.problems) == 0 && !h.damage
	h.damage = false
	if !h.held {
		h.tips, h.pol = tips, &pol
	}
	return h.held
}

// unordered holds a file whose new version does not simply append to
// the one it is held to, and returns its lines that neither version it
// is held to has; those of a merge's second parent are marked in merged.
func (h *historyCheck) unordered(s Segment, f gitrepo.GrowthFile, anyOrder bool, merged map[*Event]bool) []ledgerLine {
	inWas := make([]map[string]bool, len(f.Was))
	damaged := map[string]bool{}
	lines, _, _ := splitSegment(s, f.Now)
	for i, w := range f.Was {
		for _, p := range compareCommitted(s, w, f.Now, anyOrder) {
			if p.Line <= len(lines) && lines[p.Line-1].Event != nil && !lines[p.Line-1].HashOK && p.ID == lines[p.Line-1].Event.ID {
				h.damage = true // a line damaged, not forged: the chain check names it
				continue
			}
			h.bad(p, "rewrote committed history: "+p.Msg)
		}
		inWas[i] = map[string]bool{}
		ls, _, _ := splitSegment(s, w)
		for _, l := range ls {
			inWas[i][string(l.Raw)] = true
			if l.Event != nil && !l.HashOK {
				damaged[l.Event.ID] = true
			}
		}
	}
	var fresh []ledgerLine
	for _, l := range lines {
		switch {
		case inWas[0][string(l.Raw)]:
		case l.Event != nil && slices.ContainsFunc(inWas[1:], func(m map[string]bool) bool { return m[string(l.Raw)] }):
			merged[l.Event] = true
			fresh = append(fresh, l)
		case l.Event != nil && l.HashOK && damaged[l.Event.ID]: // a damaged line's repair
		default:
			fresh = append(fresh, l)
		}
	}
	return fresh
}

// bad records a problem found in the commit being judged.
func (h *historyCheck) bad(p Problem, what string) {
	p.Msg = h.culprit + " " + what + " (undo it with git revert " + strings.TrimPrefix(h.culprit, "commit ") + ")"
	if !strings.HasPrefix(h.culprit, "commit ") {
		p.Msg = h.culprit + " holds what no writer wrote: " + what + "; take the line out (memvault repair does not)"
	}
	p.Commit = h.culprit
	h.problems = append(h.problems, p)
}

// added judges a line a commit added: an event that chains onto an open
// tip and that the policy in effect lets its source write.
func (h *historyCheck) added(l ledgerLine) {
	p := Problem{File: l.Seg.String(), Line: l.Line}
	if l.Event == nil {
		h.bad(p, "added a line that is not an event")
		return
	}
	p.ID = l.Event.ID
	if !l.HashOK {
		h.damage = true // the chain check names it
		return
	}
	if !h.link(l.Event) {
		h.bad(p, "added an event that does not chain onto an open tip: a new branch of the ledger that no merge brought")
	}
	if msg := h.policy(l.Event); msg != "" {
		h.bad(p, "added "+msg)
	}
}

// link moves the open tips past ev; false when ev names a parent that is
// not an open tip, or starts a line of history on a ledger that has one.
func (h *historyCheck) link(ev *Event) bool {
	parents := []string{ev.Prev}
	if tips, ok := JoinTips(ev); ok && ev.Kind == KindJoin {
		parents = tips
	}
	ok := ev.Prev != "" || len(h.tips) == 0
	for _, p := range parents {
		ok = ok && (p == "" || slices.Contains(h.tips, p))
	}
	h.tips = slices.DeleteFunc(h.tips, func(t string) bool { return slices.Contains(parents, t) })
	h.tips = append(h.tips, ev.Hash)
	return ok
}

// policy says why the policy in effect refuses ev ("" when it allows it),
// as the transaction's check would have (policytx.go), and folds a policy
// event. An event with no source is judged as the command line's. A
// violation must come from the policy check and record a refusal the
// policy makes. Before the ledger's first policy event, a refusal is
// counted as a note, not a problem: the vault was written before
// policies existed.
func (h *historyCheck) policy(ev *Event) string {
	src := cmp.Or(ev.Source, SourceCLI)
	rule, ok := h.pol.Allows(ev.Kind, src)
	if ev.Kind == KindViolation {
		var d struct{ Kind, Source string }
		_ = JSONUnmarshal(ev.Data, &d)
		_, allowed := h.pol.Allows(d.Kind, d.Source)
		ok = src == SourcePolicy && d.Kind != "" && !allowed
	}
	switch {
	case ok && ev.Kind == KindPolicy:
		h.pol.fold(ev)
	case ok:
	case h.pol.Events == 0:
		h.notes++
	case ev.Kind == KindViolation:
		return "a violation that no policy check wrote (it records a refusal the policy does not make)"
	default:
		return "an event the policy refuses: " + refusal(ev.Kind, src, rule)
	}
	return ""
}
