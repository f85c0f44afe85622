package vault

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/waiting"
)

// The heads' journal. A head is written before the event that records it
// and the commit that holds it (Tx.apply: stage, seal, commit), so a
// process killed in between leaves a head that differs from HEAD with no
// event to say why; the next refresh would take memvault's own bytes for a
// person's edit (head.edited) and merge against the wrong base, a conflict
// every later render repeats. So before a transaction writes a head (or
// its .rendered/ copy) it records, durably, what it is about to do:
//
//	.locks/head-writes/<head path>.json
//	  head, event    the head and the id of the event that records the write
//	                 (head.rendered, head.resolved)
//	  before, after  the file's bytes as read and as about to be written
//	  rendered       the same for .rendered/<head path>, when written
//
// The record is removed once the commit has landed. A record still there
// at the start of a transaction (under the vault lock, so its writer is
// gone) is settled:
//
//   - its event is not in the ledger: the writer died before the seal, and
//     the transaction never happened. Files still holding exactly its bytes
//     (or a head torn inside its in-place rewrite, fileio.ReplaceIfSame) get
//     their bytes from before back; a file anyone changed since is left as
//     it is. The record goes.
//   - its event is in the ledger: the writer died after the seal, before
//     its commit. The files are right; the next head commit takes them in
//     as memvault's (commitHandEdits), not as a person's edit, and then the
//     record goes.
//
// What the journal cannot tell: a person who edits a head between the kill
// and the next transaction has their edit kept and committed as theirs; if
// the kill fell between writing the head and its .rendered/ copy (one
// rename apart), the next merge uses the older render as its base and may
// record a conflict the person resolves. A person who cuts the end off a
// head in that interval, leaving a prefix of what the killed write was
// writing, has it taken for a torn write and undone.

const headJournalDir = ".locks/head-writes"

// HeadWrite is one journal record.
type HeadWrite struct {
	Head     string         `json:"head"`
	Event    string         `json:"event"`
	Existed  bool           `json:"existed"`
	Before   []byte         `json:"before,omitempty"`
	After    []byte         `json:"after,omitempty"`
	Wrote    bool           `json:"wrote_head"` // false: only the .rendered/ copy is written
	Rendered *RenderedWrite `json:"rendered,omitempty"`
}

// RenderedWrite is the .rendered/ copy's part of a record.
type RenderedWrite struct {
	Existed bool   `json:"existed"`
	Before  []byte `json:"before,omitempty"`
	After   []byte `json:"after"`
}

func (v *Vault) HeadJournalPath(head string) string {
	return filepath.Join(v.Root, filepath.FromSlash(headJournalDir), filepath.FromSlash(head)+".json")
}

// JournalHeadWrite records w before the transaction writes it (durably:
// the record must be on disk before the head is), and removes the record
// once the transaction's commit has landed.
func (v *Vault) JournalHeadWrite(tx *Tx, w HeadWrite) error {
	data, err := json.Marshal(w)
	if err != nil {
		return err
	}
	p := v.HeadJournalPath(w.Head)
	if err := v.Files().WriteAtomic(p, data); err != nil {
		return err
	}
	if !tx.opts.Defer {
		// A deferred write keeps its record until the commit that
		// carries it (carryWaiting): the head is memvault's meanwhile.
		tx.committed = append(tx.committed, func() { v.Files().Remove(p) })
	}
	return nil
}

// HeadWaits reports whether head holds what a deferred transaction wrote
// (TxOptions.Defer) and nobody changed since: memvault's bytes, which the
// next commit carries (commitmsg.go), neither a hand edit to commit nor a
// killed write to take in.
func (v *Vault) HeadWaits(head string) bool {
	w := v.ReadHeadJournal(head)
	return w != nil && v.headWaits(w, waiting.Load(v.Files(), v.Root))
}

func (v *Vault) headWaits(w *HeadWrite, r *waiting.Record) bool {
	if !slices.ContainsFunc(r.Events, func(ev waiting.Event) bool { return ev.ID == w.Event }) {
		return false
	}
	cur, err := v.Files().ReadFile(v.Abs(RelPath{w.Head}))
	return !w.Wrote || err == nil && bytes.Equal(cur, w.After)
}

// ReadHeadJournal returns head's record, nil when there is none. A record
// that does not parse is removed: it was torn by a crash of the machine
// before the head was written (WriteAtomic syncs it first).
func (v *Vault) ReadHeadJournal(head string) *HeadWrite {
	p := v.HeadJournalPath(head)
	data, err := v.Files().ReadFile(p)
	if err != nil {
		return nil
	}
	w := new(HeadWrite)
	if json.Unmarshal(data, w) != nil || w.Head != head || w.Event == "" {
		v.Files().Remove(p)
		return nil
	}
	return w
}

// HeadJournals lists the heads that have a record.
func (v *Vault) HeadJournals() []string {
	root := filepath.Join(v.Root, filepath.FromSlash(headJournalDir))
	var heads []string
	_ = v.Files().Walk(headJournalDir, func(p string, d fs.DirEntry) error {
		if d.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err == nil {
			heads = append(heads, strings.TrimSuffix(filepath.ToSlash(rel), ".json"))
		}
		return nil
	})
	return heads
}

// SegmentOf returns the segment that holds the event with id, committed
// or not: the newest segments are read first, where an event a killed
// writer sealed is.
func (v *Vault) SegmentOf(segs []Segment, id string) (Segment, bool) {
	needle := []byte(`"id":"` + id + `"`)
	for i := len(segs) - 1; i >= 0; i-- {
		data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(segs[i].String())))
		if err == nil && bytes.Contains(data, needle) {
			return segs[i], true
		}
	}
	return Segment{}, false
}

// settleHeadWrites undoes the head writes of transactions that were killed
// before their seal (see the top of this file). It runs at the start of
// every transaction, under the vault lock; with no record it costs one
// directory read. Failures are logged, not returned: the next transaction
// tries again, and capture must not stop for a head.
func (v *Vault) settleHeadWrites(segs []Segment) {
	for _, head := range v.HeadJournals() {
		w := v.ReadHeadJournal(head)
		if w == nil {
			continue
		}
		if _, sealed := v.SegmentOf(segs, w.Event); sealed {
			continue // sealed: commitHandEdits commits its files
		}
		if err := v.undoHeadWrite(w); err != nil {
			v.LogHeads("undo of the write of %s by a killed transaction (event %s): %v", head, w.Event, err)
			continue
		}
		v.Files().Remove(v.HeadJournalPath(head))
	}
}

// undoHeadWrite puts back the bytes a killed transaction replaced, where
// its own bytes are still there.
func (v *Vault) undoHeadWrite(w *HeadWrite) error {
	rel, ok := HeadRel(w.Head)
	if !ok {
		return nil // not a head: nothing memvault would have written
	}
	p := v.Abs(rel)
	cur, err := v.Files().ReadFile(p)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	untouched := exists == w.Existed && bytes.Equal(cur, w.Before)
	if w.Wrote && exists && !untouched && (bytes.Equal(cur, w.After) || TornWrite(cur, w.Before, w.After)) {
		if w.Existed {
			err = v.Files().ReplaceIfSame(p, w.Before, cur, true)
		} else {
			err = v.Files().Remove(p)
		}
		if err != nil && !errors.Is(err, fileio.ErrChanged) {
			return err
		}
		untouched = err == nil
		v.LogHeads("%s: a transaction killed before recording its write (event %s) left its bytes; put back what was there", w.Head, w.Event)
	}
	if w.Rendered == nil || !untouched {
		// A head someone changed since keeps the .rendered/ copy that
		// goes with it: the base of its next merge.
		return nil
	}
	rp := v.Abs(MustRel(RenderedDir, w.Head))
	now, err := v.Files().ReadFile(rp)
	if err != nil || !bytes.Equal(now, w.Rendered.After) {
		return nil
	}
	if w.Rendered.Existed {
		return v.Files().WriteAtomic(rp, w.Rendered.Before)
	}
	return v.Files().Remove(rp)
}

// TornWrite reports whether cur is what an in-place rewrite of before with
// after leaves when it stops part way. fileio.ReplaceIfSame writes after
// over before from the start, then cuts the length, so the file holds the
// first k bytes of after followed by before from k on (nothing, once k
// passes its end) for some k: never shorter than before.
func TornWrite(cur, before, after []byte) bool {
	k := 0
	for k < len(cur) && k < len(after) && cur[k] == after[k] {
		k++
	}
	if k == len(cur) && len(cur) >= len(before) {
		return true
	}
	return k <= len(before) && bytes.Equal(cur[k:], before[k:])
}

// LogHeads appends a line to .logs/heads.log. Best effort: the ledger
// events are the record; the log is for people debugging a vault.
func (v *Vault) LogHeads(format string, args ...any) {
	dir := filepath.Join(v.Root, ".logs")
	if v.Files().MkdirAll(dir) != nil {
		return
	}
	// A log line, appended without fsync: not worth Root.Append's sync.
	f, err := v.Files().OpenFile(filepath.Join(dir, "heads.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, fileio.FilePerm)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", v.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}
