package heads

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/gitrepo"
)

// Heads: MEMORY.md (Tier 1) and threads/<kind>/<slug>.md (Tier 2) are
// rendered from the ledger by package render and merged with whatever
// people wrote into them. This file holds the refresh: which heads to
// render, the lease per head, the three-way merge (base = the last render
// memvault wrote, ours = the file as it is, theirs = the new render), and
// the ledger events that make all of it visible and replayable:
//
//	head.rendered  a head was rendered; data.blob is the git blob of the
//	               render (the base of the next merge), data.file the blob
//	               of what was written after merging hand edits
//	head.deferred  a refresh met a live lease held by someone else; the next
//	               refresh, of any session, retries the head
//	head.conflict  a section edited by hand and by the render could not be
//	               merged; the person's text stayed, the render's is here
//	head.resolved  `memvault resolve` settled conflicts (links name them)
//	head.edited    a hand edit was committed (`memvault edit`, or a refresh
//	               that found uncommitted edits)
//	head.takeover  an expired or unreadable lease was broken
//
// The render of every head is also committed as .rendered/<head path>, so
// the base blob named by head.rendered is reachable from the branch and
// survives a fresh clone even when hand edits made the head differ from it.

// HeadTarget is one head a refresh works on.
type HeadTarget struct {
	Rel    vault.RelPath
	Thread string // "" for MEMORY.md
}

func MemoryTarget() HeadTarget { return HeadTarget{Rel: vault.MustRel(vault.MemoryHead)} }

func threadTarget(t vault.Thread) HeadTarget {
	return HeadTarget{Rel: t.HeadPath(), Thread: t.String()}
}

func TargetOf(head string) (HeadTarget, bool) {
	switch head {
	case vault.MemoryHead:
		return MemoryTarget(), true
	case vault.ContinuityHead:
		// The protocol renders it (refreshOne hands it over); known here so
		// that a deferred refresh of it is retried like any head's.
		return HeadTarget{Rel: vault.MustRel(vault.ContinuityHead)}, true
	}
	t, ok := vault.HeadThread(head)
	if !ok {
		return HeadTarget{}, false
	}
	return threadTarget(t), true
}

// RenderHead renders one head from the view.
func RenderHead(vw *HeadView, t HeadTarget) (*render.Doc, error) {
	var doc *render.Doc
	var err error
	switch {
	case vw.cache != nil && t.Thread == "":
		doc, err = render.RenderMemory(vw.cache.mem, vw.input)
	case vw.cache != nil:
		doc, err = render.RenderThread(vw.cache.thread(t.Thread), t.Thread, vw.input)
	case t.Thread == "":
		doc, err = render.Memory(vw.input)
	default:
		doc, err = render.Thread(vw.input, t.Thread)
	}
	var be *render.BudgetError
	if errors.As(err, &be) {
		key := "memory_tokens"
		if t.Thread != "" {
			key = "thread_tokens"
		}
		e := fault.New(vault.ErrInvalid, "render: %v", err)
		return nil, e.WithHint("raise [budgets] %s in memvault.toml to at least %d", key, be.Need)
	}
	return doc, err
}

// RefreshOptions say which heads a refresh renders and on whose behalf.
type RefreshOptions struct {
	vault.TxOptions
	// Trigger is recorded in head.rendered: session-end, compaction,
	// render, edit, retry.
	Trigger string
	// Memory selects MEMORY.md.
	Memory bool
	// Threads selects thread heads by key.
	Threads []vault.Thread
	// AllThreads selects every thread head.
	AllThreads bool
	// Affected selects the thread heads whose rows changed since their last
	// render; with Session set, only the threads that session wrote to.
	Affected bool
	// Continuity selects CONTINUITY.md, through Protocol, when the file
	// is there (a vault that never ran the protocol gets none).
	Continuity bool
	// AfterWrite names the commit after the write it follows, the
	// branch's last commit when the refresh takes the lock: "heads:
	// MEMORY.md, project:alpha after decision: …", what the heads gained,
	// instead of "refresh: MEMORY.md rendered".
	AfterWrite bool
	// Held are leases the caller already holds (memvault edit renders a
	// missing head under its own lease).
	Held map[string]*HeadLease
	// Explain lists every row the budget left out in the reports.
	Explain bool
	// Protocol refreshes CONTINUITY.md when the refresh reaches it (a
	// retry of a deferred refresh, or a caller that names it): the file is
	// rendered by its protocol, whose package (vault/continuity) sits above
	// this one and passes continuity.RefreshHead. A refresh that reaches
	// CONTINUITY.md without it fails rather than skip the file.
	Protocol HeadRefresher
	// leased, set by a test, is called with the heads once their leases
	// are taken; merged, with a head once its merge is done and before the
	// file is read again for a save made while merging.
	leased func(heads []string)
	merged func(head string)
}

// A HeadRefresher renders a head this package does not render itself and
// merges it into the file, through MergeInto, inside a head refresh's
// transaction, whose caller holds the file's lease and has committed any
// uncommitted hand edit already.
type HeadRefresher func(v *vault.Vault, tx *vault.Tx, trigger string) (*HeadOutcome, error)

// HeadOutcome is what a refresh did to one head.
type HeadOutcome struct {
	Head string `json:"head"`
	// Status is one of: rendered (the file is the render), merged (hand
	// edits kept, the render merged around them), unchanged, recreated (the
	// file was missing), conflict (some sections kept the person's text;
	// see head.conflict), deferred (a live lease held by someone else),
	// empty (the file is empty, most likely being saved: left as it is).
	Status    string         `json:"status"`
	Holder    *HeadLease     `json:"holder,omitempty"`
	Sections  []string       `json:"conflict_sections,omitempty"`
	Retried   []string       `json:"retried,omitempty"` // head.deferred events this render settled
	Takeover  *Takeover      `json:"takeover,omitempty"`
	Report    *render.Report `json:"report,omitempty"`
	HandEdits bool           `json:"hand_edits_committed,omitempty"`

	current bool // unchanged, and recorded as current (markCurrent)
}

// RefreshReport is the outcome of a refresh.
type RefreshReport struct {
	Commit   string        `json:"commit,omitempty"`
	Heads    []HeadOutcome `json:"heads"`
	Warnings []string      `json:"warnings,omitempty"`
}

// Refresh renders the selected heads, merges them with hand edits and
// commits the result. Heads with a pending deferred refresh are always
// included: that is how a busy head gets its retry. A head whose lease is
// held by someone else is not touched; a head.deferred event records it.
func Refresh(v *vault.Vault, opts RefreshOptions) (*RefreshReport, error) {
	if opts.Agent == "" {
		opts.Agent = v.Config.Agent
	}
	if opts.Command == "" {
		opts.Command = "refresh"
	}
	cfg, err := LoadHeadsConfig(v)
	if err != nil {
		return nil, err
	}
	vw, err := HeadViewOf(v, cfg, opts.Explain)
	if err != nil {
		return nil, err
	}
	targets, err := selectHeads(v, vw, opts)
	if err != nil {
		return nil, err
	}
	rep := &RefreshReport{Heads: []HeadOutcome{}}
	if len(targets) == 0 {
		return rep, nil
	}

	hl, err := leaseHeads(v, opts, cfg, targets)
	defer hl.release(v, opts.Held)
	if err != nil {
		return nil, err
	}
	leases, busy, took := hl.mine, hl.busy, hl.took

	// Hand edits that nobody committed are committed first, on their own,
	// so that history shows the person's edit and the refresh separately.
	// A head someone else holds is theirs to commit.
	var mine []HeadTarget
	for _, t := range targets {
		if leases[t.Rel.String()] != nil {
			mine = append(mine, t)
		}
	}
	handEdits, redacted, err := CommitHandEdits(v, opts.TxOptions, mine, "refresh")
	if err != nil {
		return nil, err
	}

	// A person who saves a head while it is being merged makes the write
	// fail (errChangedUnderfoot) rather than be overwritten: merge again
	// with what they saved.
	var res *vault.Result
	err = RetrySaves(func() (err error) {
		res, err = refreshTx(v, opts, cfg, targets, busy, took, handEdits, rep)
		return err
	})
	if err != nil {
		return nil, err
	}
	rep.Commit = res.Commit
	rep.Warnings = append(redacted, res.Warnings...)
	return rep, nil
}

// headLeases are the leases a refresh took, and the heads it found held by
// someone else.
type headLeases struct {
	mine map[string]*HeadLease
	busy map[string]*HeadLease // held by someone else: deferred
	took map[string]*Takeover  // expired or unreadable leases broken
}

// leaseHeads takes the lease of every target, or uses the one the caller
// already holds (opts.Held).
func leaseHeads(v *vault.Vault, opts RefreshOptions, cfg HeadsConfig, targets []HeadTarget) (*headLeases, error) {
	hl := &headLeases{mine: map[string]*HeadLease{}, busy: map[string]*HeadLease{}, took: map[string]*Takeover{}}
	owner := LeaseOwner{Agent: opts.Agent, Session: opts.Session, Command: opts.Command}
	var names []string
	for _, t := range targets {
		head := t.Rel.String()
		names = append(names, head)
		if l := opts.Held[head]; l != nil {
			hl.mine[head] = l
			continue
		}
		mine, holder, tk, err := AcquireHeadLease(v, t.Rel, owner, cfg.Lease)
		if err != nil {
			return hl, err
		}
		if holder != nil {
			hl.busy[head] = holder
			continue
		}
		hl.mine[head] = mine
		if tk != nil {
			hl.took[head] = tk
		}
	}
	if opts.leased != nil {
		opts.leased(names)
	}
	return hl, nil
}

// release gives back the leases taken, not those the caller held before.
func (hl *headLeases) release(v *vault.Vault, held map[string]*HeadLease) {
	for head, l := range hl.mine {
		if held[head] == nil {
			_ = ReleaseHeadLease(v, l)
		}
	}
}

// refreshTx is the transaction of a refresh: each head rendered, merged
// with its file and queued, or deferred.
func refreshTx(v *vault.Vault, opts RefreshOptions, cfg HeadsConfig, targets []HeadTarget, busy map[string]*HeadLease,
	took map[string]*Takeover, handEdits map[string]bool, rep *RefreshReport) (*vault.Result, error) {
	return v.Update(opts.TxOptions, func(tx *vault.Tx) error {
		rep.Heads = rep.Heads[:0]
		vw, err := HeadViewOf(v, cfg, opts.Explain)
		if err != nil {
			return err
		}
		var subject []string
		for _, t := range targets {
			head := t.Rel.String()
			if holder := busy[head]; holder != nil {
				out := HeadOutcome{Head: head, Status: "deferred", Holder: holder}
				rep.Heads = append(rep.Heads, out)
				if DeferHead(tx, t.Rel, t.Thread, "refresh", opts.Trigger, holder, vw.Heads[head].book()) {
					subject = append(subject, head+" deferred")
				}
				continue
			}
			if tk := took[head]; tk != nil {
				d, _ := json.Marshal(tk)
				tx.Append(&vault.Event{Kind: vault.KindHeadTakeover, Thread: t.Thread, Source: "refresh", Data: d,
					Text: head + ": lease taken over: " + tk.Reason})
			}
			out, err := refreshOne(v, tx, vw, t, opts)
			if err != nil {
				return err
			}
			out.Takeover = took[head]
			out.HandEdits = handEdits[head]
			rep.Heads = append(rep.Heads, *out)
			switch {
			case out.current:
				subject = append(subject, head+" current")
			case out.Status != "unchanged":
				subject = append(subject, head+" "+out.Status)
			}
		}
		if len(subject) > 0 {
			after := ""
			if opts.AfterWrite {
				after = lastWrite(v)
			}
			tx.Subject(refreshSubject(subject, rep.Heads, after))
		}
		return nil
	})
}

// refreshSubject names a refresh's commit: "refresh: MEMORY.md rendered,
// …" from the heads' outcomes; after a write (after, its subject), the
// heads it brought up to date by name, MEMORY.md, thread keys and
// CONTINUITY.md, then the write: "heads: MEMORY.md, project:alpha after
// decision: use sqlite".
func refreshSubject(outcomes []string, done []HeadOutcome, after string) string {
	if after == "" {
		return "refresh: " + strings.Join(outcomes, ", ")
	}
	var names []string
	for _, h := range done {
		if h.Status == "unchanged" || h.Status == "deferred" {
			continue
		}
		name := h.Head
		if t, ok := vault.HeadThread(h.Head); ok {
			name = t.String()
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return "refresh: " + strings.Join(outcomes, ", ")
	}
	return "heads: " + strings.Join(names, ", ") + " after " + after
}

// lastWrite is the subject of the branch's last commit, the write a
// refresh follows; "" when that is a refresh itself or there is none.
func lastWrite(v *vault.Vault) string {
	var s string
	_ = v.Log(func(ci gitrepo.CommitInfo) bool {
		s = ci.Subject
		return false
	})
	if strings.HasPrefix(s, "heads: ") || strings.HasPrefix(s, "refresh: ") {
		return ""
	}
	return s
}

// RunDeferred retries every head whose refresh was deferred. It is what a
// hook event of any session calls; when nothing is pending it returns at
// once, without taking the vault lock.
func RunDeferred(v *vault.Vault, opts vault.TxOptions, protocol HeadRefresher) (*RefreshReport, error) {
	return Refresh(v, RefreshOptions{TxOptions: opts, Trigger: "retry", Protocol: protocol})
}

// selectHeads turns the options into targets, pending retries included.
func selectHeads(v *vault.Vault, vw *HeadView, opts RefreshOptions) ([]HeadTarget, error) {
	var out []HeadTarget
	have := map[string]bool{}
	add := func(t HeadTarget) {
		if !have[t.Rel.String()] {
			have[t.Rel.String()] = true
			out = append(out, t)
		}
	}
	if opts.Memory {
		add(MemoryTarget())
	}
	if opts.Continuity && exists(v, vault.MustRel(vault.ContinuityHead)) {
		add(HeadTarget{Rel: vault.MustRel(vault.ContinuityHead)})
	}
	for _, t := range opts.Threads {
		if !vw.HasThread(t.String()) {
			e := fault.New(vault.ErrNotFound, "thread %s: no such thread", t)
			return nil, e.WithHint("list threads with: memvault threads")
		}
		add(threadTarget(t))
	}
	keys := append([]string(nil), vw.Threads...)
	for _, t := range vw.input.Threads {
		keys = append(keys, t.Key)
	}
	for _, k := range keys {
		t, err := vault.ParseThread(k)
		if err != nil {
			continue
		}
		tt := threadTarget(t)
		switch {
		case opts.AllThreads:
			add(tt)
		case opts.Affected:
			if opts.Session != "" && !vw.SessionWrote(opts.Session, k) {
				// Not this session's thread, unless its file went missing.
				if h := vw.Heads[tt.Rel.String()]; h != nil && h.LastRendered != nil && !exists(v, tt.Rel) {
					add(tt)
				}
				continue
			}
			h := vw.Heads[tt.Rel.String()]
			if vw.Stale(tt.Rel.String(), k) || (h != nil && h.LastRendered != nil && !exists(v, tt.Rel)) {
				add(tt)
			}
		}
	}
	// Retries: every head with a deferred refresh pending, and every head
	// a killed process wrote without committing (headjournal.go): its
	// commitHandEdits takes the files in.
	pending := slices.DeleteFunc(v.HeadJournals(), v.HeadWaits) // a deferred write waits for the next commit
	for head, h := range vw.Heads {
		if len(h.Deferred) > 0 {
			pending = append(pending, head)
		}
	}
	sort.Strings(pending)
	for _, head := range pending {
		if t, ok := TargetOf(head); ok {
			add(t)
		}
	}
	return out, nil
}

func exists(v *vault.Vault, rel vault.RelPath) bool {
	_, err := v.Files().Stat(v.Abs(rel))
	return err == nil
}

// refreshOne renders one head, merges it with the file, and queues the
// write and the events.
func refreshOne(v *vault.Vault, tx *vault.Tx, vw *HeadView, t HeadTarget, opts RefreshOptions) (*HeadOutcome, error) {
	head, trigger := t.Rel.String(), opts.Trigger
	if head == vault.ContinuityHead {
		if opts.Protocol == nil {
			return nil, fmt.Errorf("heads: %s is refreshed by its protocol, and this refresh was given none (RefreshOptions.Protocol)", head)
		}
		return opts.Protocol(v, tx, trigger)
	}
	doc, err := RenderHead(vw, t)
	if err != nil {
		return nil, err
	}
	m, err := MergeInto(v, tx, HeadMerge{Rel: t.Rel, thread: t.Thread, Source: "refresh", Trigger: trigger,
		Theirs: doc.Bytes, Size: map[string]any{"tokens": doc.Report.Tokens}, Book: vw.Heads[head].book(), merged: opts.merged})
	if err != nil {
		return nil, err
	}
	out := &HeadOutcome{Head: head, Report: &doc.Report, Status: m.Status, Sections: m.Sections, Retried: m.retried}
	if m.Status == "unchanged" && vw.Stale(head, t.Thread) {
		out.current = markCurrent(v, tx, vw, t)
	}
	return out, nil
}

// markCurrent records that head t, whose render came out as the last one
// although rows it depends on were added since (a fact, which MEMORY.md
// does not list), is current as of those rows: a head.rendered that
// repeats the last one's blobs and conflicts. Without it, status and
// threads would call the head stale until a row that changes it.
func markCurrent(v *vault.Vault, tx *vault.Tx, vw *HeadView, t HeadTarget) bool {
	h := vw.Heads[t.Rel.String()]
	if h == nil || h.LastRendered == nil {
		return false
	}
	var data map[string]any
	if json.Unmarshal(h.LastRendered.Data, &data) != nil || data == nil {
		return false
	}
	if file, err := v.Files().ReadFile(v.Abs(t.Rel)); err == nil {
		data["file"] = gitrepo.BlobHash(file)
	}
	data["trigger"], data["current"] = "refresh", true
	d, _ := json.Marshal(data)
	tx.Append(&vault.Event{Kind: vault.KindHeadRendered, Thread: t.Thread, Source: "refresh", Data: d,
		Text: t.Rel.String() + ": unchanged, current as of the rows added since its last render"})
	return true
}

// baseOf reads the last render back: the copy under .rendered/, written
// with every render (and, after a merge of two clones, the merge of both
// sides' renders, so that what the merged head holds beyond it is what
// people wrote), else from git's object store by the hash head.rendered
// recorded. nil means no base: every hand-made section then counts as an
// edit.
func baseOf(v *vault.Vault, blob string, rendered vault.RelPath) []byte {
	if blob == "" {
		return nil
	}
	if data, err := v.Files().ReadFile(v.Abs(rendered)); err == nil {
		return data
	}
	if data, ok := v.Repo.Blob(blob); ok {
		return data
	}
	return nil
}

// Uncommitted reports whether the file on disk differs from the version at
// the branch's head commit: a hand edit nobody committed. A missing file is
// not an edit (the refresh renders it again).
func Uncommitted(v *vault.Vault, rel vault.RelPath) (bool, error) {
	data, err := v.Files().ReadFile(v.Abs(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fault.IO("read "+rel.String(), err)
	}
	committed, ok, err := v.Repo.BlobAt("", rel.String())
	if err != nil {
		return false, err
	}
	return !ok || committed != gitrepo.BlobHash(data), nil
}
