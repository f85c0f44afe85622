package lineage

// Verify's claim pass: a claim's status is the check's verdict at its
// write (claims.go), so a claim event written by hand, or edited after, can
// say "accepted" of what the state refused. The engine's history check
// holds every line to the chain and the policy; it cannot judge a claim,
// whose check lives here, so `memvault verify` runs this pass after it.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/canonical"
	"github.com/memvault/memvault/vault/fault"
)

// ForgedClaim begins the message of every problem CheckClaims finds.
const ForgedClaim = "a claim no check wrote: "

// claimLine is one ledger event with its place, for the replay.
type claimLine struct {
	ev   *vault.Event
	file string
	line int
}

// CheckClaims replays the ledger in order and judges every claim that
// says it was accepted: the claim's check, run on the state the lines
// before it fold to, must accept it. A claim is named when its status is
// not one the check writes, when it says accepted of a type memvault does
// not check, or when the state before it contradicts it in a way its
// writer must have seen. What the writer saw is the claim's own history:
// the events its chain of prev links (and a join's tips) reaches. The
// event a claim is about, and the close an accepted "commitment.closed"
// needs, come before it in any ledger; a close, retraction or supersession
// that refutes an accepted "open" or "active" claim counts only when it is
// in the claim's history, since a clone's concurrent lines may be merged in
// before a claim that never saw them. Rejected claims are not judged: a
// forged rejection hides nothing. A claim retracted since is not named:
// the retraction is the fix.
func CheckClaims(v *vault.Vault) ([]vault.Problem, error) {
	lines, err := ledgerLines(v)
	if err != nil {
		return nil, err
	}
	r := &claimReplay{lines: lines, st: &vault.State{ByID: map[string]*vault.Row{}},
		pos: map[string]int{}, byHash: map[string]int{}}
	var problems []vault.Problem
	for i, l := range lines {
		if l.ev.Kind == "claim" {
			if msg := r.judge(i); msg != "" {
				problems = append(problems, vault.Problem{File: l.file, Line: l.line, ID: l.ev.ID, Msg: ForgedClaim + msg +
					"; retract it (memvault retract) or take the line out"})
			}
		}
		r.pos[l.ev.ID], r.byHash[l.ev.Hash] = i, i
		r.st.Add(&vault.Row{Event: l.ev, File: l.file, Line: l.line})
	}
	return slices.DeleteFunc(problems, func(p vault.Problem) bool { return r.st.Get(p.ID).RetractedBy != "" }), nil
}

// claimReplay is the ledger folded up to the claim being judged, with
// every event's place by id and by hash.
type claimReplay struct {
	lines  []claimLine
	st     *vault.State
	pos    map[string]int
	byHash map[string]int
}

// judge says why the claim at lines[i] was not written by the check, or ""
// when nothing says so.
func (r *claimReplay) judge(i int) string {
	ev := r.lines[i].ev
	var d struct {
		Type   string          `json:"type"`
		Value  json.RawMessage `json:"value"`
		Status string          `json:"status"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return "its data is not an object"
	}
	checked := slices.Contains(ClaimTypes(), d.Type)
	switch {
	case d.Status != ClaimAccepted && d.Status != ClaimRejected && d.Status != ClaimUnchecked:
		return fmt.Sprintf("status %q is none the check writes", d.Status)
	case d.Status != ClaimAccepted:
		if checked && d.Status == ClaimUnchecked {
			return fmt.Sprintf("a %s claim is always checked, but it says unchecked", d.Type)
		}
		return ""
	case !checked:
		return fmt.Sprintf("it says accepted, but memvault has no check for type %q", d.Type)
	}
	v, err := canonical.Decode(d.Value)
	if err != nil {
		return "it says accepted, but its value is not json"
	}
	id, err := claimID(d.Type, v)
	if err != nil {
		return "it says accepted, but its value has no id"
	}
	reason := checkClaim(r.st, d.Type, id)
	if reason == "" || !r.seen(i, id, reason) {
		return ""
	}
	return fmt.Sprintf("it says %s=%s was accepted, but at its write %s", d.Type, compact(d.Value), reason)
}

// seen reports whether the refutation reason, found for the claim at
// lines[i] about id, rests on what the claim's writer had. An event
// missing, of another kind, or a commitment still open: whatever would make
// the claim true would come before it in any ledger. A correction of id
// that refutes it counts when it is in the claim's history.
func (r *claimReplay) seen(i int, id, reason string) bool {
	row := r.st.Get(id)
	if row == nil || strings.Contains(reason, ", not a ") {
		return true
	}
	by := cmp.Or(row.RetractedBy, row.SupersededBy, row.ClosedBy)
	if by == "" {
		return true
	}
	target, ok := r.pos[by]
	return ok && r.reaches(i, target)
}

// reaches reports whether the event at lines[target] is in the history of
// the one at lines[from]: reached along prev links and a join's tips. An
// event's history comes before it in the ledger, so the walk never goes
// below target.
func (r *claimReplay) reaches(from, target int) bool {
	seen := map[int]bool{}
	todo := []int{from}
	for len(todo) > 0 {
		i := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		ev := r.lines[i].ev
		parents := []string{ev.Prev}
		if tips, ok := vault.JoinTips(ev); ok && ev.Kind == vault.KindJoin {
			parents = tips
		}
		for _, h := range parents {
			p, ok := r.byHash[h]
			switch {
			case !ok || p < target || seen[p]:
			case p == target:
				return true
			default:
				seen[p] = true
				todo = append(todo, p)
			}
		}
	}
	return false
}

// compact is a claim's value on one line, clipped, for a problem's text.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return "?"
	}
	s := b.String()
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// ledgerLines reads every complete event line of the ledger, in ledger
// order, with its file and line number. A line that is not an event is
// skipped: the chain check names it.
func ledgerLines(v *vault.Vault) ([]claimLine, error) {
	segs, _, err := vault.ListSegments(v.Root)
	if err != nil {
		return nil, err
	}
	var out []claimLine
	for _, s := range segs {
		data, err := v.Files().ReadFile(v.SegPath(s))
		if err != nil {
			return nil, fault.IO("read "+s.String(), err)
		}
		for n := 1; len(data) > 0; n++ {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break // an unterminated last line is not an event yet
			}
			line := data[:i]
			data = data[i+1:]
			ev := new(vault.Event)
			if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, ev) != nil || ev.ID == "" {
				continue
			}
			out = append(out, claimLine{ev: ev, file: s.String(), line: n})
		}
	}
	return out, nil
}
