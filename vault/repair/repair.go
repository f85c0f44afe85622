// Package repair rebuilds a ledger that fails verification (`memvault
// repair`): an operation built on the engine, not part of it, that reads
// the ledger through vault's exported API and commits through one
// transaction.
package repair

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// Report says what a repair did (or, dry, would do).
type Report struct {
	Segments []string `json:"segments"`           // the segment files rewritten
	Markers  int      `json:"conflict_markers"`   // git conflict marker lines removed
	Restored []string `json:"restored,omitempty"` // committed events missing from the work tree, put back from HEAD
	Replaced []string `json:"replaced,omitempty"` // events whose line differed from HEAD's, given HEAD's line back
	// Uncommitted lists events the work tree holds and HEAD does not, in
	// segments the repair rewrote: kept (a write's crash leaves such
	// lines, and so does a forgery), for a person to retract if need be.
	Uncommitted []string `json:"uncommitted,omitempty"`
	Duplicates  int      `json:"duplicates"`        // second copies of an event, dropped
	Moved       int      `json:"moved"`             // events moved after the event they follow
	Changed     []string `json:"changed,omitempty"` // events whose line did not hash or chain, re-sealed
	Rechained   int      `json:"rechained"`         // events re-sealed in all (Changed and those after them)
	Unreadable  int      `json:"unreadable"`        // lines that are not events, kept under Kept only
	Kept        string   `json:"kept,omitempty"`    // where the old segments are kept
	Event       string   `json:"event,omitempty"`   // the ledger.repaired event
	Commit      string   `json:"commit,omitempty"`  // the commit, when one was made
	Staged      bool     `json:"staged,omitempty"`  // a merge in progress: written and staged for its commit
	Nothing     bool     `json:"nothing_to_do"`     // the ledger verified: nothing was changed
	// StaleLocks are the lock files under .git a killed gc left, removed
	// (gitrepo.Repo.ClearStaleGCLocks tells them from a live git's).
	StaleLocks []string `json:"stale_locks_removed,omitempty"`
}

// entry is one event on its way through a repair.
type entry struct {
	ev     *vault.Event
	raw    []byte
	hashOK bool
	seg    vault.Segment
}

// Run rebuilds a ledger that fails verification without dropping or
// altering any event's content: it removes git's conflict markers, puts
// back committed events the work tree lost (HEAD's line wins over a changed
// one), drops second copies of an event, moves events after the event they
// follow, and re-chains (re-seals prev and hash) every event from the first
// broken line on. The old segments are kept under .logs/repair-<time>/; a
// ledger.repaired event records what was done; the result is committed
// (or, in the middle of a git merge, written and staged for the merge's
// commit). With dry, nothing is written.
func Run(v *vault.Vault, dry bool) (*Report, error) {
	kept := ".logs/repair-" + time.Now().UTC().Format("20060102T150405.000")
	if err := refuseForged(v); err != nil {
		return nil, err
	}
	if dry || v.MergeInProgress() {
		return runUncommitted(v, kept, dry)
	}
	// Planned inside the transaction, under the vault lock, so that no
	// write lands between the plan and the segments it rewrites.
	var rep *Report
	res, err := v.Update(vault.TxOptions{Command: "repair", Force: true}, func(tx *vault.Tx) error {
		stale, err := v.Repo.ClearStaleGCLocks()
		if err != nil {
			return err
		}
		r, files, order, err := makePlan(v, kept)
		if err != nil {
			return err
		}
		r.StaleLocks = stale
		rep = r
		if r.Nothing {
			return nil
		}
		if err := keepOldSegments(v, r); err != nil {
			return err
		}
		for _, rel := range order {
			s, _ := vault.SegmentFromPath(rel) // the plan names segments only
			tx.WriteFile(s.Rel(), files[rel])
		}
		tx.Subject(fmt.Sprintf("repair: the ledger re-chained (%s)", r.Summary()))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rep.Nothing {
		rep.Kept = ""
		return rep, nil
	}
	rep.Commit = res.Commit
	if err := v.TrustRepair(); err != nil {
		return nil, err
	}
	after, err := v.Verify()
	if err != nil {
		return nil, err
	}
	if !after.OK {
		return rep, fault.New(fault.ErrCorrupt, "repair: the ledger still fails verification: %s", after.Problems[0])
	}
	return rep, nil
}

// refuseForged refuses a repair of a ledger whose only problems are lines
// that a commit (made with --no-verify) or the work tree brought and the
// history check refuses: a rewritten or deleted committed event, a new
// branch of the DAG no merge brought, an event the policy refuses. A
// repair re-chains what it rewrites and takes the result as trusted, so it
// would make a forgery its own; the person undoes it instead (git revert
// of the commit, or the line taken out of the work tree), and nothing is
// lost that git does not keep.
func refuseForged(v *vault.Vault) error {
	h, err := v.Health()
	if err != nil || len(h.Chain) == 0 || slices.ContainsFunc(h.Chain, func(p vault.Problem) bool { return p.Commit == "" }) {
		return nil
	}
	e := fault.New(fault.ErrCorrupt, "repair: %s", h.Chain[0])
	return e.WithHint("memvault repair mends damage; it does not take a forged history as its own: undo the commit with git revert, or take the uncommitted line out, and run memvault verify")
}

// runUncommitted plans a repair under the vault lock and, unless dry,
// writes it without a commit and stages it: in the middle of a git merge,
// the merge's own commit takes it.
func runUncommitted(v *vault.Vault, kept string, dry bool) (*Report, error) {
	release, err := v.Lock(vault.Lease{Agent: v.Config.Agent, Command: "repair"}, 0)
	if err != nil {
		return nil, err
	}
	defer release()
	rep, files, _, err := makePlan(v, kept)
	if err != nil || dry || rep.Nothing {
		if rep != nil {
			rep.Kept = ""
		}
		return rep, err
	}
	if err := keepOldSegments(v, rep); err != nil {
		return nil, err
	}
	for rel, data := range files {
		if err := v.Files().WriteAtomic(filepath.Join(v.Root, filepath.FromSlash(rel)), data); err != nil {
			return nil, err
		}
	}
	args := append([]string{"-C", v.Root, "add", "--"}, rep.Segments...)
	if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("repair: git add: %v: %s", err, bytes.TrimSpace(out))
	}
	rep.Staged = true
	return rep, nil
}

// keepOldSegments copies the segments a repair rewrites, as they are, to
// rep.Kept under .logs/.
func keepOldSegments(v *vault.Vault, rep *Report) error {
	for _, s := range rep.Segments {
		old, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(s)))
		if err != nil {
			continue // a segment HEAD had and the work tree lost
		}
		if err := v.Files().WriteAtomic(filepath.Join(v.Root, filepath.FromSlash(rep.Kept), filepath.FromSlash(s)), old); err != nil {
			return err
		}
	}
	return nil
}

// Summary is the report in one line.
func (r *Report) Summary() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(r.Markers, "conflict marker lines removed")
	add(len(r.Restored), "committed events restored")
	add(len(r.Replaced), "changed events given their committed line back")
	add(r.Duplicates, "duplicate lines dropped")
	add(r.Moved, "events moved after their prev")
	add(r.Rechained, "events re-sealed")
	add(r.Unreadable, "unreadable lines set aside")
	if len(parts) == 0 {
		return "nothing to do"
	}
	return strings.Join(parts, ", ")
}

func isConflictMarker(line []byte) bool {
	for _, m := range []string{"<<<<<<< ", ">>>>>>> ", "||||||| "} {
		if bytes.HasPrefix(line, []byte(m)) {
			return true
		}
	}
	s := string(bytes.TrimRight(line, "\r"))
	return s == "=======" || s == "<<<<<<<" || s == ">>>>>>>" || s == "|||||||"
}

// makePlan computes the repaired segments: files maps each segment to
// write to its new bytes, commitFiles lists them in chain order.
func makePlan(v *vault.Vault, kept string) (*Report, map[string][]byte, []string, error) {
	p := &plan{v: v, rep: &Report{Kept: kept}, original: map[string][]byte{},
		uncommitted: map[vault.Segment][]string{}, perSeg: map[vault.Segment][]*entry{}}
	if err := p.read(); err != nil {
		return nil, nil, nil, err
	}
	if err := p.rechain(); err != nil {
		return nil, nil, nil, err
	}
	files, lastSeg := p.layout()
	if len(files) == 0 && len(p.tips) <= 1 {
		p.rep.Nothing = true
		return p.rep, nil, nil, nil
	}
	if err := p.record(files, lastSeg); err != nil {
		return nil, nil, nil, err
	}
	return p.rep, files, p.rep.Segments, nil
}

// plan is a repair worked out in memory, step by step: the lines of
// every segment read (read), the chain mended (rechain), the segments
// written out again (layout), and the repair recorded (record).
type plan struct {
	v           *vault.Vault
	rep         *Report
	all         []vault.Segment            // every segment, on disk or in HEAD, in order
	original    map[string][]byte          // each segment's bytes on disk
	uncommitted map[vault.Segment][]string // ids of lines on disk only, per segment
	order       []*entry                   // every event, in chain order
	perSeg      map[vault.Segment][]*entry // the events each segment keeps
	tips        []string                   // the open tips after the re-chain
	last        string                     // the hash the next line chains onto
}

// read reads every segment on disk and in HEAD, in order, keeping each
// event once.
func (p *plan) read() error {
	v := p.v
	segs, _, err := vault.ListSegments(v.Root)
	if err != nil {
		return err
	}
	head, err := committedSegments(v)
	if err != nil {
		return err
	}
	p.all = slices.Clone(segs)
	for path := range head {
		if s, ok := vault.SegmentFromPath(path); ok && !slices.Contains(p.all, s) {
			p.all = append(p.all, s)
		}
	}
	slices.SortFunc(p.all, compareSegments)
	// In the middle of a git merge, HEAD is one side: the other side's
	// lines are not "uncommitted".
	merging := v.MergeInProgress()
	seen := make(map[string]bool) // event ids placed so far
	for _, s := range p.all {
		data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(s.String())))
		if err != nil && !os.IsNotExist(err) {
			return fault.IO("read "+s.String(), err)
		}
		p.original[s.String()] = data
		committed := head[s.String()]
		lines := p.mergeLines(s, p.diskLines(s, data), committed, merging)
		var kept []*entry
		for _, l := range lines {
			if seen[l.ev.ID] {
				p.rep.Duplicates++
				continue
			}
			seen[l.ev.ID] = true
			kept = append(kept, l)
		}
		p.rep.Moved += afterPrevs(kept)
		p.perSeg[s] = kept
		p.order = append(p.order, kept...)
	}
	return nil
}

// diskLines parses the lines of a segment as it is on disk, counting the
// conflict markers and unreadable lines it skips.
func (p *plan) diskLines(s vault.Segment, data []byte) []*entry {
	var disk []*entry
	for _, raw := range bytes.Split(data, []byte("\n")) {
		switch {
		case len(bytes.TrimSpace(raw)) == 0:
			continue
		case isConflictMarker(raw):
			p.rep.Markers++
			continue
		}
		ev, ok, perr := vault.ParseLine(raw)
		if perr != nil || ev == nil || ev.ID == "" {
			p.rep.Unreadable++
			continue
		}
		disk = append(disk, &entry{ev: ev, raw: raw, hashOK: ok, seg: s})
	}
	return disk
}

// mergeLines puts HEAD's lines of a segment first, in HEAD's order, then
// the work tree's others: a committed event is never lost, and HEAD's line
// wins over a changed one, unless it fails its own hash (a forced commit)
// and the work tree's checks. A line on disk only is uncommitted, unless a
// git merge is in progress (merging: HEAD is then one side only).
func (p *plan) mergeLines(s vault.Segment, disk []*entry, committed []byte, merging bool) []*entry {
	var lines []*entry
	diskByID := make(map[string]*entry, len(disk))
	for _, l := range disk {
		if _, dup := diskByID[l.ev.ID]; !dup {
			diskByID[l.ev.ID] = l
		}
	}
	for _, raw := range bytes.Split(committed, []byte("\n")) {
		ev, ok, perr := vault.ParseLine(raw)
		if len(bytes.TrimSpace(raw)) == 0 || perr != nil || ev == nil {
			continue
		}
		switch d := diskByID[ev.ID]; {
		case d == nil:
			p.rep.Restored = append(p.rep.Restored, ev.ID)
		case bytes.Equal(d.raw, raw):
		case !ok && d.hashOK:
			lines = append(lines, d)
			continue
		default:
			p.rep.Replaced = append(p.rep.Replaced, ev.ID)
		}
		lines = append(lines, &entry{ev: ev, raw: raw, hashOK: ok, seg: s})
	}
	inHead := make(map[string]bool, len(lines))
	for _, l := range lines {
		inHead[l.ev.ID] = true
	}
	for _, l := range disk {
		if !inHead[l.ev.ID] {
			lines = append(lines, l)
			if committed != nil && !merging {
				p.uncommitted[s] = append(p.uncommitted[s], l.ev.ID)
			}
		}
	}
	return lines
}

// rechain walks the events in chain order, re-sealing each whose line does
// not hash, whose prev names no earlier event, or whose prev was itself
// re-sealed, and finds the tips left open.
func (p *plan) rechain() error {
	renamed := make(map[string]string) // old hash -> new hash
	known := make(map[string]bool)
	changed := make(map[string]bool)
	mapped := func(h string) string {
		if n, ok := renamed[h]; ok {
			return n
		}
		return h
	}
	for _, l := range p.order {
		ev := l.ev
		oldHash := ev.Hash
		prev, parents, broken := p.parentsOf(l, mapped, known, changed)
		if prev != ev.Prev || broken {
			line, err := ev.Seal(prev)
			if err != nil {
				return err
			}
			l.raw = bytes.TrimSuffix(line, []byte("\n"))
			renamed[oldHash] = ev.Hash
			p.rep.Rechained++
		}
		known[ev.Hash] = true
		p.tips = slices.DeleteFunc(p.tips, func(t string) bool { return slices.Contains(parents, t) })
		p.tips = append(p.tips, ev.Hash)
		p.last = ev.Hash
	}
	for _, l := range p.order {
		if changed[l.ev.ID] {
			p.rep.Changed = append(p.rep.Changed, l.ev.ID)
		}
	}
	return nil
}

// parentsOf decides what l's event chains onto: its prev (renamed when
// that was re-sealed), the last event when its prev names none placed
// before it, or, for a join, the tips it still has. broken says the line
// must be sealed again.
func (p *plan) parentsOf(l *entry, mapped func(string) string, known, changed map[string]bool) (prev string, parents []string, broken bool) {
	ev := l.ev
	prev = mapped(ev.Prev)
	broken = !l.hashOK || (prev != "" && !known[prev])
	if ev.Kind != vault.KindJoin {
		if broken {
			if prev != "" && !known[prev] {
				prev = p.last
			}
			changed[ev.ID] = true
		}
		return prev, []string{prev}, broken
	}
	ts, _ := vault.JoinTips(ev)
	var ps []string
	for _, t := range ts {
		if t = mapped(t); known[t] && !slices.Contains(ps, t) {
			ps = append(ps, t)
		}
	}
	slices.Sort(ps)
	if len(ps) >= 2 {
		if !slices.Equal(ps, ts) {
			ev.Data = vault.WithData(ev.Data, "tips", ps)
			broken = true
		}
		return ps[0], ps, broken
	}
	// Nothing left to join: the line stays, as a note that follows the
	// last event.
	ev.Kind, ev.Data = "ledger.note", vault.WithData(ev.Data, "was", vault.KindJoin)
	changed[ev.ID] = true
	return p.last, []string{p.last}, true
}

// layout writes every segment out again, and returns those that changed
// and the last segment that holds an event.
func (p *plan) layout() (map[string][]byte, vault.Segment) {
	files := make(map[string][]byte)
	var lastSeg vault.Segment
	for _, s := range p.all {
		var buf bytes.Buffer
		for _, l := range p.perSeg[s] {
			buf.Write(l.raw)
			buf.WriteByte('\n')
		}
		if len(p.perSeg[s]) > 0 {
			lastSeg = s
		}
		if !bytes.Equal(buf.Bytes(), p.original[s.String()]) {
			files[s.String()] = buf.Bytes()
			p.rep.Uncommitted = append(p.rep.Uncommitted, p.uncommitted[s]...)
		}
	}
	return files, lastSeg
}

// record appends, at the end of the last segment, a join when lines of
// history remain apart and the ledger.repaired event that records the
// repair.
func (p *plan) record(files map[string][]byte, lastSeg vault.Segment) error {
	v, rep := p.v, p.rep
	tail := files[lastSeg.String()]
	if tail == nil {
		tail = slices.Clone(p.original[lastSeg.String()])
	}
	last := p.last
	if len(p.tips) > 1 {
		latest := time.Time{}
		for _, l := range p.order {
			if slices.Contains(p.tips, l.ev.Hash) && l.ev.Time().After(latest) {
				latest = l.ev.Time()
			}
		}
		join := vault.NewJoin(v.Config.Agent, p.tips, latest)
		line, err := join.Seal(join.Prev)
		if err != nil {
			return err
		}
		tail = append(tail, line...)
		last = join.Hash
	}
	for s := range files {
		rep.Segments = append(rep.Segments, s)
	}
	if !slices.Contains(rep.Segments, lastSeg.String()) {
		rep.Segments = append(rep.Segments, lastSeg.String())
	}
	data, _ := json.Marshal(rep)
	var d map[string]any
	_ = json.Unmarshal(data, &d)
	delete(d, "event")
	delete(d, "commit")
	delete(d, "nothing_to_do")
	if len(rep.Changed) > 100 {
		d["changed"] = rep.Changed[:100]
	}
	dj, _ := json.Marshal(d)
	now := time.Now()
	if v.Clock != nil {
		now = v.Clock()
	}
	ev := &vault.Event{ID: vault.NewID("e_", now), TS: vault.FormatTS(now), Agent: v.Config.Agent, Kind: vault.KindRepaired,
		Text: "repaired the ledger: " + rep.Summary(), Data: dj, Source: "cli"}
	line, err := ev.Seal(last)
	if err != nil {
		return err
	}
	files[lastSeg.String()] = append(tail, line...)
	rep.Event = ev.ID
	slices.SortFunc(rep.Segments, func(a, b string) int {
		sa, _ := vault.SegmentFromPath(a)
		sb, _ := vault.SegmentFromPath(b)
		return compareSegments(sa, sb)
	})
	return nil
}

// compareSegments orders segments as the chain runs.
func compareSegments(a, b vault.Segment) int {
	if a.Less(b) {
		return -1
	}
	if b.Less(a) {
		return 1
	}
	return 0
}

// afterPrevs reorders lines, stably, so that an event whose prev is in the
// same list comes after it; it returns how many events moved.
func afterPrevs(lines []*entry) int {
	pos := make(map[string]int, len(lines))
	for i, l := range lines {
		if _, dup := pos[l.ev.Hash]; !dup {
			pos[l.ev.Hash] = i
		}
	}
	placed := make([]bool, len(lines))
	visiting := make([]bool, len(lines))
	out := make([]*entry, 0, len(lines))
	var place func(i int)
	place = func(i int) {
		if placed[i] || visiting[i] {
			return // placed, or a cycle of prevs: keep the file's order
		}
		visiting[i] = true
		if j, ok := pos[lines[i].ev.Prev]; ok && j != i {
			place(j)
		}
		placed[i] = true
		out = append(out, lines[i])
	}
	for i := range lines {
		place(i)
	}
	moved := 0
	for i := range out {
		if out[i] != lines[i] {
			moved++
		}
	}
	copy(lines, out)
	return moved
}

// committedSegments returns HEAD's ledger segments by path; none before the
// first commit.
func committedSegments(v *vault.Vault) (map[string][]byte, error) {
	out := make(map[string][]byte)
	tree, err := v.Repo.TreeAt("")
	if err != nil || tree == nil {
		return out, err
	}
	lt, err := tree.Tree("ledger")
	if err != nil {
		return out, nil
	}
	err = lt.Files().ForEach(func(f *object.File) error {
		if !strings.HasSuffix(f.Name, ".jsonl") {
			return nil
		}
		data, ok := v.Repo.Blob(f.Hash.String())
		if ok {
			out["ledger/"+f.Name] = data
		}
		return nil
	})
	return out, err
}
