package executor

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/heads"
)

// AuditQuery selects the delegations `memvault audit` lists.
type AuditQuery struct {
	Executor string    // "" all
	Task     string    // "" all; else only the delegations of this task id (data.task_id, exact)
	Since    time.Time // zero: from the start
	Limit    int       // 0: all; else the newest Limit
}

// AuditRow is one delegation as the audit lists it.
type AuditRow struct {
	TS          string    `json:"ts"`
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
	Executor    string    `json:"executor"`
	Task        string    `json:"task"`
	TaskID      string    `json:"task_id"`
	Arbitration string    `json:"arbitration"`
	Attempts    []Attempt `json:"attempts"`
	Checksum    string    `json:"checksum,omitempty"`
	ChecksumBy  string    `json:"checksum_by,omitempty"`
	Code        string    `json:"code,omitempty"`
	Text        string    `json:"text"`
}

// Audit lists the vault's delegations, oldest first, as q selects them.
func Audit(v *vault.Vault, q AuditQuery) ([]AuditRow, error) {
	st, err := v.LoadStateWith([][]byte{[]byte(`"executor.`)})
	if err != nil {
		return nil, err
	}
	var out []AuditRow
	for _, r := range st.Rows {
		if r.Kind != KindDelegation && r.Kind != KindDelegationFailed {
			continue
		}
		if !q.Since.IsZero() && r.Time().Before(q.Since) {
			continue
		}
		var d delegationData
		_ = json.Unmarshal(r.Data, &d)
		if q.Executor != "" && d.Executor != q.Executor || q.Task != "" && d.ID != q.Task {
			continue
		}
		if d.Attempts == nil {
			d.Attempts = []Attempt{}
		}
		out = append(out, AuditRow{TS: r.TS, ID: r.ID, Kind: r.Kind, Executor: d.Executor, Task: d.Task, TaskID: d.ID,
			Arbitration: d.Arbitration, Attempts: d.Attempts, Checksum: d.Checksum, ChecksumBy: d.ChecksumBy,
			Code: d.Code, Text: r.Text})
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[len(out)-q.Limit:]
	}
	return out, nil
}

// ReplayRange narrows what a replay compares: the events from From to
// To, both included (event ids, or unique prefixes of them; "" is the
// ledger's first or last), at or after Since (zero: any time). The
// chain is verified whole whatever the range: a link of a hash chain is
// only as good as the ones before it.
type ReplayRange struct {
	From, To string
	Since    time.Time
}

func (r ReplayRange) whole() bool { return r.From == "" && r.To == "" && r.Since.IsZero() }

// ReplayReport is what `memvault audit replay` found.
type ReplayReport struct {
	OK bool `json:"ok"`
	// Range: the first and last event compared, and how many; empty for
	// the whole ledger.
	Range *ReplayRangeReport `json:"range,omitempty"`
	// Ledger: the chain's verification (every hash, every prev).
	Events   int             `json:"events"`
	Problems []vault.Problem `json:"problems"`
	// Delegations: every recorded result hashed again.
	Delegations int           `json:"delegations"`
	Verified    int           `json:"verified"`
	Redacted    []string      `json:"redacted"`   // ids whose result was redacted: its checksum is of what the executor sent
	Mismatches  []ReplayIssue `json:"mismatches"` // results that do not hash to their checksum
	// State: the ledger folded again, twice, against the vault's cached
	// fold: the digests must agree.
	StateDigest  string `json:"state_digest"`  // every field of every row
	CachedDigest string `json:"cached_digest"` // the cached fold's, without sources; equal to the ledger's fold so digested

	Differences []ReplayIssue `json:"differences"`
}

// ReplayRangeReport is the range a replay compared.
type ReplayRangeReport struct {
	First  string `json:"first"`
	Last   string `json:"last"`
	Events int    `json:"events"`
}

// ReplayIssue is one thing replay found wrong.
type ReplayIssue struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Replay re-verifies the ledger's chain and every delegation's checksum,
// and folds the state again from the ledger alone, twice, comparing the
// folds with each other and with the vault's cached fold. It changes
// nothing. rng narrows the checksums and the comparison of the folds to
// a range of events (the rows of those events); the chain is verified
// whole.
func Replay(v *vault.Vault, rng ReplayRange) (*ReplayReport, error) {
	rep := &ReplayReport{Problems: []vault.Problem{}, Redacted: []string{}, Mismatches: []ReplayIssue{}, Differences: []ReplayIssue{}}
	vr, err := v.Verify()
	if err != nil {
		return nil, err
	}
	rep.Events, rep.Problems = vr.Events, append(rep.Problems, vr.Problems...)
	segs, _, err := vault.ListSegments(v.Root)
	if err != nil {
		return nil, err
	}
	st, _, _, err := v.FoldAll(segs)
	if err != nil {
		return nil, err
	}
	in, err := rangeOf(st, rng)
	if err != nil {
		return nil, err
	}
	if !rng.whole() {
		rep.Range = &ReplayRangeReport{}
		for _, r := range st.Rows {
			if in[r.ID] {
				if rep.Range.First == "" {
					rep.Range.First = r.ID
				}
				rep.Range.Last = r.ID
				rep.Range.Events++
			}
		}
	}
	for _, r := range st.Rows {
		if r.Kind != KindDelegation || !in[r.ID] {
			continue
		}
		rep.Delegations++
		if issue := checkResult(r.Event); issue != "" {
			var d struct {
				Redacted map[string]int `json:"redacted"`
			}
			if json.Unmarshal(r.Data, &d) == nil && len(d.Redacted) > 0 {
				rep.Redacted = append(rep.Redacted, r.ID)
				continue
			}
			rep.Mismatches = append(rep.Mismatches, ReplayIssue{ID: r.ID, Reason: issue})
			continue
		}
		rep.Verified++
	}
	again, _, _, err := v.FoldAll(segs)
	if err != nil {
		return nil, err
	}
	folded, refolded := only(st.Rows, in), only(again.Rows, in)
	rep.StateDigest = digest(folded, true)
	if d := digest(refolded, true); d != rep.StateDigest {
		rep.Differences = append(rep.Differences, ReplayIssue{Reason: "two folds of the same ledger differ: " + d[:12] + " and " + rep.StateDigest[:12]})
	}
	cached, _, err := heads.FoldedState(v)
	if err != nil {
		return nil, err
	}
	// The cached fold keeps every field but the source: compared on those.
	cachedRows := cached.Rows
	if !rng.whole() {
		cachedRows = only(cachedRows, in) // a row the ledger lacks has no place in a range
	}
	rep.CachedDigest = digest(cachedRows, false)
	if want := digest(folded, false); rep.CachedDigest != want {
		rep.Differences = append(rep.Differences, diffRows(folded, cachedRows)...)
	}
	rep.OK = len(rep.Problems) == 0 && len(rep.Mismatches) == 0 && len(rep.Differences) == 0
	return rep, nil
}

// rangeOf is the set of the ids of st's rows that rng takes in.
func rangeOf(st *vault.State, rng ReplayRange) (map[string]bool, error) {
	lo, hi := 0, len(st.Rows)-1
	at := func(arg string) (int, error) {
		id, err := st.ResolveEventID("audit replay", arg)
		if err != nil {
			return 0, err
		}
		return slices.IndexFunc(st.Rows, func(r *vault.Row) bool { return r.ID == id }), nil
	}
	var err error
	if rng.From != "" {
		if lo, err = at(rng.From); err != nil {
			return nil, err
		}
	}
	if rng.To != "" {
		if hi, err = at(rng.To); err != nil {
			return nil, err
		}
	}
	if lo > hi && len(st.Rows) > 0 {
		return nil, fault.New(fault.ErrInvalid, "audit replay: %s..%s: the first event comes after the last", rng.From, rng.To).
			WithHint("a range is FROM..TO in the ledger's order (memvault ledger lists it)")
	}
	in := make(map[string]bool, hi-lo+1)
	for _, r := range st.Rows[lo : hi+1] {
		if rng.Since.IsZero() || !r.Time().Before(rng.Since) {
			in[r.ID] = true
		}
	}
	return in, nil
}

// only is the rows whose ids are in, in their order.
func only(rows []*vault.Row, in map[string]bool) []*vault.Row {
	out := make([]*vault.Row, 0, len(in))
	for _, r := range rows {
		if in[r.ID] {
			out = append(out, r)
		}
	}
	return out
}

// checkResult says what is wrong with a delegation's recorded result: ""
// when data.result hashes to data.checksum.
func checkResult(ev *vault.Event) string {
	var d delegationData
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return "data is not a delegation's: " + err.Error()
	}
	if len(d.Result) == 0 || d.Checksum == "" {
		return "no result or no checksum"
	}
	_, sum, err := Checksum(d.Result)
	if err != nil {
		return "the result is not JSON: " + err.Error()
	}
	if sum != d.Checksum {
		return fmt.Sprintf("the result hashes to %s, the event says %s", sum[:12], clip(d.Checksum, 12))
	}
	return ""
}

// foldedRow is what a row's digest covers: the event as folded, and what
// the fold made of it.
type foldedRow struct {
	ID, TS, Kind, Thread, Text, Source, Agent, Session string
	Data                                               json.RawMessage
	Links                                              []string
	RetractedBy, SupersededBy, ClosedBy                string
}

// rowOf is r as a digest covers it; without its source for a comparison
// with the cached fold, which does not keep it (the heads do not show it).
func rowOf(r *vault.Row, source bool) foldedRow {
	f := foldedRow{ID: r.ID, TS: r.TS, Kind: r.Kind, Thread: r.Thread, Text: r.Text, Source: r.Source, Agent: r.Agent,
		Session: r.Session, Data: compact(r.Data), Links: r.Links, RetractedBy: r.RetractedBy, SupersededBy: r.SupersededBy, ClosedBy: r.ClosedBy}
	if !source {
		f.Source = ""
	}
	return f
}

func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// digest is the SHA-256 of the rows, in ledger order.
func digest(rows []*vault.Row, source bool) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, r := range rows {
		_ = enc.Encode(rowOf(r, source))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// diffRows names the rows where two folds disagree (at most 20).
func diffRows(want, got []*vault.Row) []ReplayIssue {
	var out []ReplayIssue
	byID := map[string]*vault.Row{}
	for _, r := range got {
		byID[r.ID] = r
	}
	for _, r := range want {
		g, ok := byID[r.ID]
		switch {
		case !ok:
			out = append(out, ReplayIssue{ID: r.ID, Reason: "in the ledger, not in the cached fold"})
		default:
			if fields := differingFields(rowOf(r, false), rowOf(g, false)); len(fields) > 0 {
				out = append(out, ReplayIssue{ID: r.ID, Reason: "the cached fold holds another version of it: " + strings.Join(fields, ", ")})
			}
		}
		delete(byID, r.ID)
	}
	rest := slices.Sorted(func(yield func(string) bool) {
		for id := range byID {
			if !yield(id) {
				return
			}
		}
	})
	for _, id := range rest {
		out = append(out, ReplayIssue{ID: id, Reason: "in the cached fold, not in the ledger"})
	}
	if len(out) == 0 {
		out = append(out, ReplayIssue{Reason: "the cached fold orders the rows differently"})
	}
	return out[:min(len(out), 20)]
}

// differingFields names the fields in which two folded rows differ.
func differingFields(a, b foldedRow) []string {
	var am, bm map[string]json.RawMessage
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	_ = json.Unmarshal(ja, &am)
	_ = json.Unmarshal(jb, &bm)
	var out []string
	for k, v := range am {
		if !bytes.Equal(v, bm[k]) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
