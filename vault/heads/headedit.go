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
	lease, holder, took, err := AcquireHeadLease(v, rel, LeaseOwner{Agent: opts.Agent, Session: opts.Session, Command: "edit"}, cfg.Lease)
	if err != nil {
		return nil, err
	}
	if holder != nil {
		e := fault.New(vault.ErrBusy, "edit: %s: lease held by %s", head, holder)
		return nil, e.WithHint("wait for it to be released; a lease that expires is taken over")
	}
	defer ReleaseHeadLease(v, lease)
	// Keep the lease alive while the editor is open.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_ = RenewHeadLease(v, lease, cfg.Lease)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	if took != nil {
		v.LogHeads("edit of %s took over a lease: %s", head, took.Reason)
	}

	original, err := v.Files().ReadFile(v.Abs(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist) && head == vault.ContinuityHead:
		original = opts.Template
	case errors.Is(err, fs.ErrNotExist):
		// Render the head first, under this lease, so there is something
		// to edit and a base for the next merge.
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

	dir := filepath.Join(v.Root, ".state", "edit", lease.Token)
	work := filepath.Join(dir, filepath.Base(head))
	if err := v.Files().WriteAtomic(work, original); err != nil {
		return nil, err
	}
	keep := false
	defer func() {
		if !keep {
			v.Files().RemoveAll(dir)
		}
	}()
	if err := opts.Editor(work); err != nil {
		return nil, err
	}
	edited, err := v.Files().ReadFile(work)
	if err != nil {
		return nil, fault.IO("read the edited copy", err)
	}
	res := &EditResult{Head: head}
	if bytes.Equal(edited, original) {
		return res, nil
	}
	if err := vault.CheckText("edit", string(edited), true); err != nil {
		return nil, err
	}
	// The file is written only if it still holds what the merge read: a
	// save in between (by hand: memvault itself defers to the lease) makes
	// the transaction read and merge again.
	var r *vault.Result
	err = RetrySaves(func() (err error) {
		r, err = v.Update(opts.TxOptions, func(tx *vault.Tx) error {
			now, err := v.Files().ReadFile(v.Abs(rel))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fault.IO("read "+head, err)
			}
			existed := err == nil
			result := edited
			if existed && !bytes.Equal(now, original) {
				// Someone changed the file while the editor was open.
				// Merge both edits.
				m, merr := merge.Markdown(original, now, edited, merge.MarkdownOptions{})
				if merr != nil {
					return merr
				}
				if !m.Clean() {
					keep = true
					e := fault.New(vault.ErrConflict, "edit: %s changed on disk while you edited it, in the same sections", head)
					return e.WithHint("your version is kept in %s; merge it by hand", work)
				}
				result = m.Merged
			}
			clean, counts := v.Redact(string(result))
			result = []byte(clean)
			res.Redacted = counts
			tx.WriteFileIfUnchanged(rel, result, now, existed)
			fields := map[string]any{"head": head, "blob": gitrepo.BlobHash(result), "via": "edit"}
			if len(counts) > 0 {
				fields["redacted"] = counts
			}
			d, _ := json.Marshal(fields)
			ev := tx.Append(&vault.Event{Kind: vault.KindHeadEdited, Thread: thread, Text: "hand edit of " + head, Data: d, Source: "edit"})
			res.Event = ev.ID
			tx.Subject("head.edited: hand edit of " + head)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	res.Changed, res.Commit = true, r.Commit
	return res, nil
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
			next := cur
			for _, c := range h.Conflicts {
				next = applyTheirs(next, c.Data)
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
// the render dropped is removed; one the person deleted is appended.
func applyTheirs(doc []byte, data json.RawMessage) []byte {
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
			continue
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
