// Package waiting keeps what a deferred transaction wrote and did not
// commit (vault.TxOptions.Defer): the paths the next commit carries and
// the events it names in its message. The record is
// .locks/deferred.json, below the vault's root, written atomically and
// durably under the vault lock, and removed once a commit holds what it
// lists. It is not committed (.locks/ is ignored by git).
//
// The record is a help, not the truth: the files themselves are on disk
// and the ledger's lines past HEAD are always found again by comparing
// each segment with HEAD (vault.Flush does), so a record lost or torn
// costs the names in a commit message, never a line of memory.
package waiting

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memvault/memvault/vault/fileio"
)

// File is the record's path below the vault's root.
const File = ".locks/deferred.json"

// Event is an event a deferred transaction sealed, as a commit message
// names it.
type Event struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Text string `json:"text,omitempty"`
}

// Record is what waits for a commit.
type Record struct {
	// Paths are the files the deferred transactions wrote (and the
	// ledger segments they appended to), as slash paths below the root.
	Paths []string `json:"paths"`
	// Events are the events they sealed, oldest first.
	Events []Event `json:"events,omitempty"`
	// Subjects are the subjects their commits would have had, oldest
	// first ("session-summary: how should webhooks retry?").
	Subjects []string `json:"subjects,omitempty"`
}

// Empty reports whether nothing waits.
func (r *Record) Empty() bool { return r == nil || len(r.Paths) == 0 && len(r.Events) == 0 }

// AddPaths adds paths not listed yet.
func (r *Record) AddPaths(paths ...string) {
	for _, p := range paths {
		if p != "" && !slices.Contains(r.Paths, p) {
			r.Paths = append(r.Paths, p)
		}
	}
}

// Load reads the record of the vault at root; none (or one that does not
// parse: torn by a crash of the machine) is an empty record.
func Load(files fileio.Root, root string) *Record {
	r := &Record{}
	data, err := files.ReadFile(filepath.Join(root, filepath.FromSlash(File)))
	if err != nil || json.Unmarshal(data, r) != nil {
		return &Record{}
	}
	return r
}

// Save writes r, atomically and durably.
func Save(files fileio.Root, root string, r *Record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	p := filepath.Join(root, filepath.FromSlash(File))
	if err := files.MkdirAll(filepath.Dir(p)); err != nil {
		return err
	}
	return files.WriteAtomic(p, data)
}

// Remove removes the record: a commit holds what it listed.
func Remove(files fileio.Root, root string) {
	_ = files.Remove(filepath.Join(root, filepath.FromSlash(File)))
}

// Label is the short word of a memory kind in a subject: "decision" for
// decision.recorded, "next" for continuity.next.
func Label(kind string) string {
	switch kind {
	case "decision.recorded":
		return "decision"
	case "learning.recorded":
		return "learning"
	case "continuity.next":
		return "next"
	case "continuity.done":
		return "done"
	case "continuity.goal":
		return "goal"
	}
	return kind
}

// Counts says how many memory events of each label there are, in the
// order of ranked ("2 decisions, 1 next"): memory reports whether a kind
// is memory and its rank (the engine's subject order).
func Counts(events []Event, memory func(kind string) (rank int, ok bool)) string {
	type count struct {
		label string
		rank  int
		n     int
	}
	var cs []*count
	for _, ev := range events {
		rank, ok := memory(ev.Kind)
		if !ok {
			continue
		}
		l := Label(ev.Kind)
		i := slices.IndexFunc(cs, func(c *count) bool { return c.label == l })
		if i < 0 {
			cs = append(cs, &count{label: l, rank: rank})
			i = len(cs) - 1
		}
		cs[i].n++
	}
	slices.SortStableFunc(cs, func(a, b *count) int { return a.rank - b.rank })
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%d %s", c.n, plural(c.label, c.n)))
	}
	return strings.Join(out, ", ")
}

func plural(label string, n int) string {
	switch {
	case n == 1, label == "next", label == "done", strings.Contains(label, "."), strings.HasSuffix(label, "s"):
		return label
	}
	return label + "s"
}
