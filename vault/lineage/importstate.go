package lineage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/memvault/memvault/vault"

	"github.com/memvault/memvault/vault/transcript"
)

// What an import keeps between calls, per agent, session, format and
// source file, in .state/imports/<key>.json: how far the source was read,
// what the imports without a commit added since the last
// transcript.imported event, which prompts a hook stored that no import
// has matched yet, and, while a batch is being appended, what that batch
// is. The file is written only under the vault lock, inside the
// transaction that appends the batch and before anything is appended, so
// a process killed at any point leaves a file that says what to do next:
// settleImport reads the transcript to tell whether the batch landed.

// importProgress is how far an import got, and what it knows.
type importProgress struct {
	transcript.Cursor
	// Unrecorded is what imports without a commit (a hook's turn) added
	// since the last transcript.imported event of this source: the next
	// commit of the session records it (lineage.RecordImport).
	Unrecorded *importRecord `json:"unrecorded,omitempty"`
	// Dedupe: the source is being read again from its start (a fresh
	// clone, a deleted .state/, a rewritten file) into a transcript that
	// has messages; those messages' ids, listed in <key>.known, are
	// skipped until the source's end.
	Dedupe bool `json:"dedupe,omitempty"`
	// Prompts are the prompts a hook stored (format "hook") that no
	// message of this source has matched yet, kept so that an import
	// reads only the transcript lines added since At.
	Prompts *promptMatch `json:"prompts,omitempty"`
	// Resume is set when a batch may have been partly appended by a
	// process that was killed: until the source is read past Until, the
	// messages stored after From are the batch's and are not stored again.
	Resume *importResume `json:"resume,omitempty"`
}

// importState is the whole file.
type importState struct {
	Source string            `json:"source"`
	Format transcript.Format `json:"format"`
	Agent  string            `json:"agent"`
	Sess   string            `json:"session"`
	importProgress
	// Pending is the batch being appended when the file was written.
	Pending *importBatch `json:"pending,omitempty"`

	fresh bool // no file: nothing was imported from this source yet
}

// importBatch is one transaction's worth of a source: the transcript's end
// before it and after it, its last message, and the progress once it has
// landed.
type importBatch struct {
	Before transcript.Pos `json:"before"`
	End    transcript.Pos `json:"end"`
	Last   string         `json:"last"`
	After  importProgress `json:"after"`
}

type importResume struct {
	From  transcript.Pos `json:"from"`
	Until int64          `json:"until"`
}

// promptMatch counts, by a hash of their text, the hook prompts of a
// transcript no imported message has matched, up to At.
type promptMatch struct {
	At     transcript.Pos `json:"at"`
	Counts map[string]int `json:"counts,omitempty"`
	// Taken are the ids of prompts matched while they still waited in the
	// spool (spool.go): when they reach the transcript they are not
	// counted again.
	Taken map[string]bool `json:"taken,omitempty"`
}

// see counts a stored message after At, if it is a hook's prompt.
func (pm *promptMatch) see(m transcript.Stored) {
	if m.Role != transcript.RoleUser || m.Source.Format != transcript.HookFormat {
		return
	}
	if pm.Taken[m.ID] {
		delete(pm.Taken, m.ID)
		return
	}
	pm.Counts[promptKey(m.Text)]++
}

func promptKey(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:12])
}

// take matches one stored hook prompt with text, if one is left.
func (pm *promptMatch) take(text string) bool {
	k := promptKey(text)
	if pm.Counts[k] == 0 {
		return false
	}
	if pm.Counts[k]--; pm.Counts[k] == 0 {
		delete(pm.Counts, k)
	}
	return true
}

func (pm *promptMatch) clone() *promptMatch {
	c := &promptMatch{At: pm.At, Counts: make(map[string]int, len(pm.Counts)), Taken: map[string]bool{}}
	for k, n := range pm.Counts {
		c.Counts[k] = n
	}
	for id := range pm.Taken {
		c.Taken[id] = true
	}
	return c
}

func importStatePath(v *vault.Vault, t transcript.Ref, format transcript.Format, source string) string {
	sum := sha256.Sum256([]byte(t.Agent + "\x00" + t.Session + "\x00" + string(format) + "\x00" + source))
	return filepath.Join(v.Root, ".state", "imports", hex.EncodeToString(sum[:12])+".json")
}

// loadImport reads the state at path and settles a pending batch. mine is
// the batch this process appended last, known to have landed, which spares
// reading the transcript to find out. A file that does not parse counts as
// none: the import starts over, skipping what is stored.
func loadImport(v *vault.Vault, t transcript.Ref, path string, mine *importBatch) importState {
	var st importState
	data, err := v.Files().ReadFile(path)
	if err != nil || json.Unmarshal(data, &st) != nil {
		return importState{fresh: true}
	}
	settleImport(v, t, &st, mine)
	return st
}

// settleImport resolves a pending batch: landed when the transcript line
// at the batch's end is its last message, else (killed before or while it
// was appended) the import goes on from before the batch, and the batch's
// messages already stored are recognised by their ids (Resume).
func settleImport(v *vault.Vault, t transcript.Ref, st *importState, mine *importBatch) {
	p := st.Pending
	if p == nil {
		return
	}
	st.Pending = nil
	landed := mine != nil && mine.Before == p.Before && mine.End == p.End && mine.Last == p.Last
	if !landed {
		landed = transcript.IDEndingAt(v.Files(), t, p.End) == p.Last
	}
	if landed {
		st.importProgress = p.After
		return
	}
	r := &importResume{From: p.Before, Until: p.After.Offset}
	if old := st.Resume; old != nil {
		if old.From.Before(r.From) {
			r.From = old.From
		}
		r.Until = max(r.Until, old.Until)
	}
	st.Resume = r
}

// saveImport writes the state; callers hold the vault lock.
func saveImport(v *vault.Vault, path string, st importState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("import state: %w", err)
	}
	return v.Files().WriteAtomic(path, data)
}

// knownPath lists the ids a deduplicating import skips.
func knownPath(statePath string) string { return strings.TrimSuffix(statePath, ".json") + ".known" }

// startDedupe lists the ids stored in t for an import that reads its source
// again from the start, and reports whether there are any.
func startDedupe(v *vault.Vault, t transcript.Ref, statePath string) (bool, error) {
	ids, err := transcript.MessageIDs(v.Files(), t)
	if err != nil || len(ids) == 0 {
		return false, err
	}
	list := make([]string, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	data, err := json.Marshal(list)
	if err != nil {
		return false, err
	}
	return true, v.Files().WriteAtomic(knownPath(statePath), data)
}

// knownIDs reads the list startDedupe wrote, or the transcript's ids when it
// is gone.
func knownIDs(v *vault.Vault, t transcript.Ref, statePath string) (map[string]bool, error) {
	data, err := v.Files().ReadFile(knownPath(statePath))
	var list []string
	if err != nil || json.Unmarshal(data, &list) != nil {
		return transcript.MessageIDs(v.Files(), t)
	}
	ids := make(map[string]bool, len(list))
	for _, id := range list {
		ids[id] = true
	}
	return ids, nil
}

// dropKnown removes the list once the import has read its source to the
// end. A list left behind (the removal failed) is harmless: only a
// deduplicating import reads it, and startDedupe writes it anew first.
func dropKnown(v *vault.Vault, statePath string) { _ = v.Files().Remove(knownPath(statePath)) }

// foldPrompts brings pm up to the transcript's end `to`: every prompt a hook
// stored after pm.At counts as unmatched. With no pm (an import kept from
// before, a fresh clone) or one whose place no longer fits the transcript, it
// reads the whole transcript, matching each hook prompt with an imported
// user message of the same text stored after it.
func foldPrompts(v *vault.Vault, t transcript.Ref, pm *promptMatch, to transcript.Pos) (*promptMatch, error) {
	if pm != nil && !to.Before(pm.At) && transcript.ValidPos(v.Files(), t, pm.At) {
		pm = pm.clone()
		err := transcript.ReadFrom(v.Files(), t, pm.At, func(m transcript.Stored, end transcript.Pos) error {
			if to.Before(end) {
				return transcript.ErrStop
			}
			pm.see(m)
			return nil
		})
		if err != nil && !errors.Is(err, transcript.ErrStop) {
			return nil, err
		}
		pm.At = to
		return pm, nil
	}
	pm = &promptMatch{At: to, Counts: map[string]int{}, Taken: map[string]bool{}}
	err := transcript.ReadFrom(v.Files(), t, transcript.Pos{}, func(m transcript.Stored, end transcript.Pos) error {
		if to.Before(end) {
			return transcript.ErrStop
		}
		if m.Role != transcript.RoleUser {
			return nil
		}
		k := promptKey(m.Text)
		if m.Source.Format == transcript.HookFormat {
			pm.Counts[k]++
		} else if pm.Counts[k] > 0 {
			pm.Counts[k]-- // already matched by an earlier import
		}
		return nil
	})
	if err != nil && !errors.Is(err, transcript.ErrStop) {
		return nil, err
	}
	for k, n := range pm.Counts {
		if n == 0 {
			delete(pm.Counts, k)
		}
	}
	return pm, nil
}

// resumedIDs returns the ids and numbers of the messages stored after r.From.
func resumedIDs(v *vault.Vault, t transcript.Ref, r *importResume) (map[string]int, error) {
	ids := map[string]int{}
	from := r.From
	if !transcript.ValidPos(v.Files(), t, from) {
		from = transcript.Pos{} // the transcript changed under it: every stored id counts
	}
	err := transcript.ReadFrom(v.Files(), t, from, func(m transcript.Stored, _ transcript.Pos) error {
		ids[m.ID] = m.N
		return nil
	})
	return ids, err
}

// waitingPrompts returns, by a hash of their text, the ids of t's prompts
// still in the spool: not folded by this transaction (queued), not matched
// already (pm.Taken). An import matches them as it matches stored ones.
func waitingPrompts(v *vault.Vault, t transcript.Ref, pm *promptMatch, queued []transcript.Stored) map[string][]string {
	in := map[string]bool{}
	for _, m := range queued {
		in[m.ID] = true
	}
	var out map[string][]string
	for _, m := range v.Spooled(t) {
		if m.Role != transcript.RoleUser || m.Source.Format != transcript.HookFormat || in[m.ID] || pm.Taken[m.ID] {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		k := promptKey(m.Text)
		out[k] = append(out[k], m.ID)
	}
	return out
}
