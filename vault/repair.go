package vault

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

	"github.com/memvault/memvault/vault/fault"
)

// KindRepaired records what `memvault repair` did to the ledger.
const KindRepaired = "ledger.repaired"

// RepairReport says what a repair did (or, dry, would do).
type RepairReport struct {
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
}

// repairLine is one event on its way through a repair.
type repairLine struct {
	ev     *Event
	raw    []byte
	hashOK bool
	seg    Segment
}

// Repair rebuilds a ledger that fails verification without dropping or
// altering any event's content: it removes git's conflict markers, puts
// back committed events the work tree lost (HEAD's line wins over a changed
// one), drops second copies of an event, moves events after the event they
// follow, and re-chains (re-seals prev and hash) every event from the first
// broken line on. The old segments are kept under .logs/repair-<time>/; a
// ledger.repaired event records what was done; the result is committed
// (or, in the middle of a git merge, written and staged for the merge's
// commit). With dry, nothing is written.
func (v *Vault) Repair(dry bool) (*RepairReport, error) {
	kept := ".logs/repair-" + time.Now().UTC().Format("20060102T150405.000")
	if dry || v.mergeInProgress() != nil {
		return v.repairUncommitted(kept, dry)
	}
	// Planned inside the transaction, under the vault lock, so that no
	// write lands between the plan and the segments it rewrites.
	var rep *RepairReport
	res, err := v.Update(TxOptions{Command: "repair", Force: true}, func(tx *Tx) error {
		r, files, order, err := v.planRepair(kept)
		if err != nil {
			return err
		}
		rep = r
		if r.Nothing {
			return nil
		}
		if err := v.keepOldSegments(r); err != nil {
			return err
		}
		for _, rel := range order {
			tx.WriteFile(RelPath{rel}, files[rel])
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
	after, err := v.Verify()
	if err != nil {
		return nil, err
	}
	if !after.OK {
		return rep, fault.New(ErrCorrupt, "repair: the ledger still fails verification: %s", after.Problems[0])
	}
	return rep, nil
}

// repairUncommitted plans a repair under the vault lock and, unless dry,
// writes it without a commit and stages it: in the middle of a git merge,
// the merge's own commit takes it.
func (v *Vault) repairUncommitted(kept string, dry bool) (*RepairReport, error) {
	release, err := v.Lock(Lease{Agent: v.Config.Agent, Command: "repair"}, 0)
	if err != nil {
		return nil, err
	}
	defer release()
	rep, files, _, err := v.planRepair(kept)
	if err != nil || dry || rep.Nothing {
		if rep != nil {
			rep.Kept = ""
		}
		return rep, err
	}
	if err := v.keepOldSegments(rep); err != nil {
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
func (v *Vault) keepOldSegments(rep *RepairReport) error {
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
func (r *RepairReport) Summary() string {
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

// planRepair computes the repaired segments: files maps each segment to
// write to its new bytes, commitFiles lists them in chain order.
func (v *Vault) planRepair(kept string) (*RepairReport, map[string][]byte, []string, error) {
	rep := &RepairReport{Kept: kept}
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		return nil, nil, nil, err
	}
	head, err := v.committedSegments()
	if err != nil {
		return nil, nil, nil, err
	}
	all := slices.Clone(segs)
	for p := range head {
		if s, ok := SegmentFromPath(p); ok && !slices.Contains(all, s) {
			all = append(all, s)
		}
	}
	slices.SortFunc(all, func(a, b Segment) int {
		if a.Less(b) {
			return -1
		}
		if b.Less(a) {
			return 1
		}
		return 0
	})
	original := make(map[string][]byte)
	// In the middle of a git merge, HEAD is one side: the other side's
	// lines are not "uncommitted".
	merging := v.mergeInProgress() != nil
	uncommitted := make(map[Segment][]string)
	seen := make(map[string]bool) // event ids placed so far
	var order []*repairLine       // every event, in chain order
	perSeg := make(map[Segment][]*repairLine)
	for _, s := range all {
		data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(s.String())))
		if err != nil && !os.IsNotExist(err) {
			return nil, nil, nil, fault.IO("read "+s.String(), err)
		}
		original[s.String()] = data
		var disk []*repairLine
		for _, raw := range bytes.Split(data, []byte("\n")) {
			switch {
			case len(bytes.TrimSpace(raw)) == 0:
				continue
			case isConflictMarker(raw):
				rep.Markers++
				continue
			}
			ev, ok, perr := ParseLine(raw)
			if perr != nil || ev == nil || ev.ID == "" {
				rep.Unreadable++
				continue
			}
			disk = append(disk, &repairLine{ev: ev, raw: raw, hashOK: ok, seg: s})
		}
		// HEAD's lines first, in HEAD's order, then the work tree's others:
		// a committed event is never lost, and HEAD's line wins over a
		// changed one.
		var lines []*repairLine
		committed := head[s.String()]
		diskByID := make(map[string]*repairLine, len(disk))
		for _, l := range disk {
			if _, dup := diskByID[l.ev.ID]; !dup {
				diskByID[l.ev.ID] = l
			}
		}
		for _, raw := range bytes.Split(committed, []byte("\n")) {
			ev, ok, perr := ParseLine(raw)
			if len(bytes.TrimSpace(raw)) == 0 || perr != nil || ev == nil {
				continue
			}
			switch d := diskByID[ev.ID]; {
			case d == nil:
				rep.Restored = append(rep.Restored, ev.ID)
			case bytes.Equal(d.raw, raw):
			case !ok && d.hashOK:
				// A committed line that fails its own hash (a forced
				// commit) gives way to one that checks.
				lines = append(lines, d)
				continue
			default:
				rep.Replaced = append(rep.Replaced, ev.ID)
			}
			lines = append(lines, &repairLine{ev: ev, raw: raw, hashOK: ok, seg: s})
		}
		inHead := make(map[string]bool, len(lines))
		for _, l := range lines {
			inHead[l.ev.ID] = true
		}
		for _, l := range disk {
			if !inHead[l.ev.ID] {
				lines = append(lines, l)
				if committed != nil && !merging {
					uncommitted[s] = append(uncommitted[s], l.ev.ID)
				}
			}
		}
		var kept []*repairLine
		for _, l := range lines {
			if seen[l.ev.ID] {
				rep.Duplicates++
				continue
			}
			seen[l.ev.ID] = true
			kept = append(kept, l)
		}
		moved := afterPrevs(kept)
		rep.Moved += moved
		perSeg[s] = kept
		order = append(order, kept...)
	}

	// Re-chain: walk in chain order, re-sealing each event whose line does
	// not hash, whose prev names no earlier event, or whose prev was
	// itself re-sealed.
	renamed := make(map[string]string) // old hash -> new hash
	known := make(map[string]bool)
	var tips []string
	last := ""
	changed := make(map[string]bool)
	for _, l := range order {
		ev := l.ev
		oldHash := ev.Hash
		mapped := func(h string) string {
			if n, ok := renamed[h]; ok {
				return n
			}
			return h
		}
		prev := mapped(ev.Prev)
		broken := !l.hashOK || (prev != "" && !known[prev])
		var parents []string
		if ev.Kind == KindJoin {
			ts, _ := JoinTips(ev)
			var ps []string
			for _, t := range ts {
				if t = mapped(t); known[t] && !slices.Contains(ps, t) {
					ps = append(ps, t)
				}
			}
			slices.Sort(ps)
			if len(ps) >= 2 {
				if !slices.Equal(ps, ts) {
					ev.Data = WithData(ev.Data, "tips", ps)
					broken = true
				}
				prev, parents = ps[0], ps
			} else {
				// Nothing left to join: the line stays, as a note that
				// follows the last event.
				ev.Kind, ev.Data = "ledger.note", WithData(ev.Data, "was", KindJoin)
				prev, parents, broken = last, []string{last}, true
				changed[ev.ID] = true
			}
		} else {
			if broken {
				if prev != "" && !known[prev] {
					prev = last
				}
				changed[ev.ID] = true
			}
			parents = []string{prev}
		}
		if prev != ev.Prev || broken {
			line, err := ev.Seal(prev)
			if err != nil {
				return nil, nil, nil, err
			}
			l.raw = bytes.TrimSuffix(line, []byte("\n"))
			renamed[oldHash] = ev.Hash
			rep.Rechained++
		}
		known[ev.Hash] = true
		tips = slices.DeleteFunc(tips, func(t string) bool { return slices.Contains(parents, t) })
		tips = append(tips, ev.Hash)
		last = ev.Hash
	}
	for _, l := range order {
		if changed[l.ev.ID] {
			rep.Changed = append(rep.Changed, l.ev.ID)
		}
	}

	files := make(map[string][]byte)
	var lastSeg Segment
	for _, s := range all {
		var buf bytes.Buffer
		for _, l := range perSeg[s] {
			buf.Write(l.raw)
			buf.WriteByte('\n')
		}
		if len(perSeg[s]) > 0 {
			lastSeg = s
		}
		if !bytes.Equal(buf.Bytes(), original[s.String()]) {
			files[s.String()] = buf.Bytes()
			rep.Uncommitted = append(rep.Uncommitted, uncommitted[s]...)
		}
	}
	if len(files) == 0 && len(tips) <= 1 {
		rep.Nothing = true
		return rep, nil, nil, nil
	}
	// The record of the repair, and a join when lines of history remain
	// apart, go at the end of the last segment.
	tail := files[lastSeg.String()]
	if tail == nil {
		tail = slices.Clone(original[lastSeg.String()])
	}
	if len(tips) > 1 {
		latest := time.Time{}
		for _, l := range order {
			if slices.Contains(tips, l.ev.Hash) && l.ev.Time().After(latest) {
				latest = l.ev.Time()
			}
		}
		join := joinOf(v.Config.Agent, tips, latest)
		line, err := join.Seal(join.Prev)
		if err != nil {
			return nil, nil, nil, err
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
	ev := &Event{ID: NewID("e_", now), TS: FormatTS(now), Agent: v.Config.Agent, Kind: KindRepaired,
		Text: "repaired the ledger: " + rep.Summary(), Data: dj, Source: "cli"}
	line, err := ev.Seal(last)
	if err != nil {
		return nil, nil, nil, err
	}
	files[lastSeg.String()] = append(tail, line...)
	rep.Event = ev.ID
	slices.SortFunc(rep.Segments, func(a, b string) int {
		sa, _ := SegmentFromPath(a)
		sb, _ := SegmentFromPath(b)
		if sa.Less(sb) {
			return -1
		}
		if sb.Less(sa) {
			return 1
		}
		return 0
	})
	return rep, files, rep.Segments, nil
}

// afterPrevs reorders lines, stably, so that an event whose prev is in the
// same list comes after it; it returns how many events moved.
func afterPrevs(lines []*repairLine) int {
	pos := make(map[string]int, len(lines))
	for i, l := range lines {
		if _, dup := pos[l.ev.Hash]; !dup {
			pos[l.ev.Hash] = i
		}
	}
	placed := make([]bool, len(lines))
	visiting := make([]bool, len(lines))
	out := make([]*repairLine, 0, len(lines))
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
func (v *Vault) committedSegments() (map[string][]byte, error) {
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
