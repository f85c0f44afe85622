package heads

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/memvault/memvault/merge"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/gitrepo"
)

// EditOptions describe a hand edit through `memvault edit`.
type EditOptions struct {
	vault.TxOptions
	// Head is MEMORY.md (the default), CONTINUITY.md, a thread key or
	// alias, or a head's path.
	Head string
	// Editor edits the file at path in place and returns when the person
	// is done; an error abandons the edit.
	Editor func(path string) error
	// Template is what a missing CONTINUITY.md starts from: its protocol's
	// empty render (continuity.Template). Heads this package renders start
	// from their render instead.
	Template []byte
}

// EditResult is the outcome of an edit.
type EditResult struct {
	Head    string `json:"head"`
	Changed bool   `json:"changed"`
	Commit  string `json:"commit,omitempty"`
	Event   string `json:"event,omitempty"`
	// Redacted counts the credentials of the edit replaced by markers.
	Redacted map[string]int `json:"redacted,omitempty"`
}

// EditHead lets a person edit a head under its lease: refreshes that come
// while the editor is open are deferred, not merged into a file that is
// being written. The person edits a copy under .state/edit/; on save the
// copy is committed as the head, merged with any change someone made to the
// file on disk meanwhile. An editor that fails leaves the vault as it was.
func EditHead(v *vault.Vault, opts EditOptions) (*EditResult, error) {
	if opts.Agent == "" {
		opts.Agent = v.Config.Agent
	}
	rel, thread, err := ResolveHeadArg(v, opts.Head, true)
	if err != nil {
		return nil, err
	}
	head := rel.String()
	cfg, err := LoadHeadsConfig(v)
	if err != nil {
		return nil, err
	}
	lease, took, err := acquireEditLease(v, rel, opts, cfg.Lease)
	if err != nil {
		return nil, err
	}
	defer ReleaseHeadLease(v, lease)
	stop := renewWhileEditing(v, lease, cfg.Lease)
	defer stop()
	if took != nil {
		v.LogHeads("edit of %s took over a lease: %s", head, took.Reason)
	}
	original, err := textToEdit(v, rel, thread, lease, opts)
	if err != nil {
		return nil, err
	}

	e := &headEdit{v: v, rel: rel, head: head, thread: thread, original: original,
		dir: filepath.Join(v.Root, ".state", "edit", lease.Token)}
	e.work = filepath.Join(e.dir, filepath.Base(head))
	if err := v.Files().WriteAtomic(e.work, original); err != nil {
		return nil, err
	}
	defer e.removeCopy()
	if err := opts.Editor(e.work); err != nil {
		return nil, err
	}
	if e.edited, err = v.Files().ReadFile(e.work); err != nil {
		return nil, fault.IO("read the edited copy", err)
	}
	e.res = &EditResult{Head: head}
	if bytes.Equal(e.edited, original) {
		return e.res, nil
	}
	if err := vault.CheckText("edit", string(e.edited), true); err != nil {
		return nil, err
	}
	// The file is written only if it still holds what the merge read: a
	// save in between (by hand: memvault itself defers to the lease) makes
	// the transaction read and merge again.
	var r *vault.Result
	err = RetrySaves(func() (err error) {
		r, err = v.Update(opts.TxOptions, e.save)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.res.Changed, e.res.Commit = true, r.Commit
	return e.res, nil
}

// acquireEditLease takes the head's lease for the edit, or says who holds
// it; it returns the lease it took over, if it took one over.
func acquireEditLease(v *vault.Vault, rel vault.RelPath, opts EditOptions, ttl time.Duration) (*HeadLease, *Takeover, error) {
	lease, holder, took, err := AcquireHeadLease(v, rel, LeaseOwner{Agent: opts.Agent, Session: opts.Session, Command: "edit"}, ttl)
	if err != nil {
		return nil, nil, err
	}
	if holder != nil {
		e := fault.New(vault.ErrBusy, "edit: %s: lease held by %s", rel.String(), holder)
		return nil, nil, e.WithHint("wait for it to be released; a lease that expires is taken over")
	}
	return lease, took, nil
}

// renewWhileEditing keeps the lease alive while the editor is open,
// renewing it every third of its time to live. The function it returns
// stops the renewals and waits until none is under way.
func renewWhileEditing(v *vault.Vault, lease *HeadLease, ttl time.Duration) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_ = renewHeadLease(v, lease, ttl)
			}
		}
	}()
	return func() { close(stop); wg.Wait() }
}

// textToEdit is the head's text the person starts from. A missing
// CONTINUITY.md starts from opts.Template; any other missing head is
// rendered first, under the edit's lease, so there is something to edit
// and a base for the next merge.
func textToEdit(v *vault.Vault, rel vault.RelPath, thread string, lease *HeadLease, opts EditOptions) ([]byte, error) {
	head := rel.String()
	original, err := v.Files().ReadFile(v.Abs(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist) && head == vault.ContinuityHead:
		original = opts.Template
	case errors.Is(err, fs.ErrNotExist):
		ro := RefreshOptions{TxOptions: opts.TxOptions, Trigger: "edit", Held: map[string]*HeadLease{head: lease}}
		if thread == "" {
			ro.Memory = true
		} else {
			th, _ := vault.ParseThread(thread)
			ro.Threads = []vault.Thread{th}
		}
		if _, err := Refresh(v, ro); err != nil {
			return nil, err
		}
		if original, err = v.Files().ReadFile(v.Abs(rel)); err != nil {
			return nil, fault.IO("read "+head, err)
		}
	case err != nil:
		return nil, fault.IO("read "+head, err)
	}
	return original, nil
}

// headEdit is one EditHead once the person has a copy to edit: the head,
// its text when the copy was made, and the copy under .state/edit/.
type headEdit struct {
	v            *vault.Vault
	rel          vault.RelPath
	head, thread string
	original     []byte // the head as the copy was made from it
	edited       []byte // the copy once the editor returned
	dir, work    string // the copy's folder, and the copy
	keep         bool   // the copy holds an edit that could not be merged: left for the person
	res          *EditResult
}

// removeCopy removes the copy, unless it is kept for the person to merge.
func (e *headEdit) removeCopy() {
	if !e.keep {
		e.v.Files().RemoveAll(e.dir)
	}
}

// save is the transaction that writes the edit: merged with what the file
// holds now when someone changed it while the editor was open (a conflict
// keeps the copy and refuses the edit), its credentials redacted, and
// recorded as a head.edited event.
func (e *headEdit) save(tx *vault.Tx) error {
	now, err := e.v.Files().ReadFile(e.v.Abs(e.rel))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fault.IO("read "+e.head, err)
	}
	existed := err == nil
	result := e.edited
	if existed && !bytes.Equal(now, e.original) {
		// Someone changed the file while the editor was open.
		// Merge both edits.
		m, merr := merge.Markdown(e.original, now, e.edited, merge.MarkdownOptions{})
		if merr != nil {
			return merr
		}
		if !m.Clean() {
			e.keep = true
			fe := fault.New(vault.ErrConflict, "edit: %s changed on disk while you edited it, in the same sections", e.head)
			return fe.WithHint("your version is kept in %s; merge it by hand", e.work)
		}
		result = m.Merged
	}
	clean, counts := e.v.Redact(string(result))
	result = []byte(clean)
	e.res.Redacted = counts
	tx.WriteFileIfUnchanged(e.rel, result, now, existed)
	fields := map[string]any{"head": e.head, "blob": gitrepo.BlobHash(result), "via": "edit"}
	if len(counts) > 0 {
		fields["redacted"] = counts
	}
	d, _ := json.Marshal(fields)
	ev := tx.Append(&vault.Event{Kind: vault.KindHeadEdited, Thread: e.thread, Text: "hand edit of " + e.head, Data: d, Source: "edit"})
	e.res.Event = ev.ID
	tx.Subject("head.edited: hand edit of " + e.head)
	return nil
}

// ResolveResult is the outcome of `memvault resolve`.
type ResolveResult struct {
	Head     string   `json:"head"`
	Take     string   `json:"take"`
	Resolved []string `json:"resolved"` // head.conflict ids
	Commit   string   `json:"commit,omitempty"`
}

// ResolveHeads settles the unresolved conflicts of one head (or of every
// head, when head is ""). take "ours" keeps the file as it is; "theirs"
// puts the render's version of each conflicted section in place of the
// person's. Either way a head.resolved event names the conflicts.
func ResolveHeads(v *vault.Vault, headArg, take string, opts vault.TxOptions) ([]ResolveResult, error) {
	if take != "ours" && take != "theirs" {
		return nil, fault.New(vault.ErrInvalid, "resolve: take %q: want ours or theirs", take)
	}
	want := ""
	if headArg != "" {
		rel, _, err := ResolveHeadArg(v, headArg, true)
		if err != nil {
			return nil, err
		}
		want = rel.String()
	}
	st, _, err := FoldedState(v)
	if err != nil {
		return nil, err
	}
	var todo []HeadState
	for _, h := range HeadStatesOf(v, st) {
		if len(h.Conflicts) > 0 && (want == "" || h.Head == want) {
			todo = append(todo, h)
		}
	}
	if len(todo) == 0 {
		what := "any head"
		if want != "" {
			what = want
		}
		return nil, fault.New(vault.ErrNotFound, "resolve: no unresolved conflict in %s", what)
	}
	cfg, err := LoadHeadsConfig(v)
	if err != nil {
		return nil, err
	}
	owner := LeaseOwner{Agent: opts.Agent, Session: opts.Session, Command: "resolve"}
	var leases []*HeadLease
	defer func() {
		for _, l := range leases {
			_ = ReleaseHeadLease(v, l)
		}
	}()
	for _, h := range todo {
		l, holder, _, err := AcquireHeadLease(v, vault.MustRel(h.Head), owner, cfg.Lease)
		if err != nil {
			return nil, err
		}
		if holder != nil {
			e := fault.New(vault.ErrBusy, "resolve: %s: lease held by %s", h.Head, holder)
			return nil, e.WithHint("retry once it is released")
		}
		leases = append(leases, l)
	}
	var out []ResolveResult
	var r *vault.Result
	err = RetrySaves(func() (err error) {
		r, err = v.Update(opts, func(tx *vault.Tx) error { return resolveTx(v, tx, todo, take, &out) })
		return err
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Commit = r.Commit
	}
	return out, nil
}

// resolveTx is ResolveHeads' transaction. Taking the render's text writes
// the head only if it still holds what was read, journalled like a
// refresh's write (headjournal.go).
func resolveTx(v *vault.Vault, tx *vault.Tx, todo []HeadState, take string, out *[]ResolveResult) error {
	*out = (*out)[:0]
	for _, h := range todo {
		rel := vault.MustRel(h.Head)
		res := ResolveResult{Head: h.Head, Take: take}
		for _, c := range h.Conflicts {
			res.Resolved = append(res.Resolved, c.ID)
		}
		var w *vault.HeadWrite
		if take == "theirs" {
			cur, err := v.Files().ReadFile(v.Abs(rel))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fault.IO("read "+h.Head, err)
			}
			// The render now: a conflict stands across refreshes, and the
			// render's version it recorded may be older than the last.
			now, _ := v.Files().ReadFile(v.Abs(vault.MustRel(vault.RenderedDir, h.Head)))
			next := cur
			for _, c := range h.Conflicts {
				next = applyTheirs(next, c.Data, now)
			}
			if !bytes.Equal(next, cur) {
				tx.WriteFileIfUnchanged(rel, next, cur, err == nil)
				w = &vault.HeadWrite{Head: h.Head, Existed: err == nil, Before: cur, After: next, Wrote: true}
			}
		}
		d, _ := json.Marshal(map[string]string{"head": h.Head, "take": take})
		t, _ := TargetOf(h.Head)
		ev := tx.Append(&vault.Event{Kind: vault.KindHeadResolved, Thread: t.Thread, Data: d, Links: res.Resolved, Source: "cli",
			Text: fmt.Sprintf("%s: %d conflict(s) resolved, kept %s", h.Head, len(res.Resolved), map[string]string{"ours": "the file's text", "theirs": "the render's text"}[take])})
		if w != nil {
			w.Event = ev.ID
			if err := v.JournalHeadWrite(tx, *w); err != nil {
				return err
			}
		}
		*out = append(*out, res)
	}
	return nil
}

// applyTheirs puts the render's text of each section of a head.conflict
// event into doc: a whole-file conflict replaces the file; a section is
// found by its heading path and replaced up to the next heading; a section
// the render dropped is removed; one the person deleted is appended. The
// render's text is the last render's (now, the .rendered/ copy) where it
// has that section, else the one the event recorded.
func applyTheirs(doc []byte, data json.RawMessage, now []byte) []byte {
	var d struct {
		Sections []struct {
			Heading string `json:"heading"`
			Whole   bool   `json:"whole_file"`
			Theirs  string `json:"theirs"`
		} `json:"sections"`
	}
	if json.Unmarshal(data, &d) != nil {
		return doc
	}
	for _, s := range d.Sections {
		if s.Whole {
			doc = []byte(s.Theirs)
			if len(now) > 0 {
				doc = bytes.Clone(now)
			}
			continue
		}
		if start, end, ok := findSection(now, s.Heading); ok {
			s.Theirs = string(now[start:end])
		}
		start, end, ok := findSection(doc, s.Heading)
		switch {
		case ok:
			doc = append(append(append([]byte{}, doc[:start]...), s.Theirs...), doc[end:]...)
		case s.Theirs != "":
			if len(doc) > 0 && doc[len(doc)-1] != '\n' {
				doc = append(doc, '\n')
			}
			doc = append(doc, s.Theirs...)
		}
	}
	return doc
}

// findSection locates the section with heading path want ("MEMORY >
// Commitments") among the ATX headings of doc, outside code fences: from
// its heading line to the next heading line.
func findSection(doc []byte, want string) (start, end int, ok bool) {
	type frame struct {
		level int
		path  string
	}
	var stack []frame
	fence := ""
	start = -1
	for off := 0; off < len(doc); {
		e := bytes.IndexByte(doc[off:], '\n')
		next := len(doc)
		if e >= 0 {
			next = off + e + 1
		}
		line := strings.TrimRight(string(doc[off:next]), "\r\n")
		trim := strings.TrimLeft(line, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
		case strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~"):
			fence = trim[:3]
		default:
			level := len(trim) - len(strings.TrimLeft(trim, "#"))
			if level >= 1 && level <= 6 && len(line)-len(trim) <= 3 && (len(trim) == level || trim[level] == ' ') {
				if start >= 0 {
					return start, off, true
				}
				title := strings.TrimSpace(strings.ReplaceAll(strings.Trim(trim[level:], " #"), merge.KeepMarker, ""))
				title = strings.Join(strings.Fields(title), " ")
				for len(stack) > 0 && stack[len(stack)-1].level >= level {
					stack = stack[:len(stack)-1]
				}
				p := title
				if len(stack) > 0 {
					p = stack[len(stack)-1].path + " > " + title
				}
				stack = append(stack, frame{level, p})
				if p == want {
					start = off
				}
			}
		}
		off = next
	}
	if start >= 0 {
		return start, len(doc), true
	}
	return 0, 0, false
}
