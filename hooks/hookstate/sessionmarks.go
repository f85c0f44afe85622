package hookstate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/transcript"
)

// Session marks are per-session scratch state: a set of ids (the hooks keep
// the rows and nodes a session was already shown, so a prompt does not show
// them again). They live in .state/hooks/<hash of agent and session>.json as
// a sorted JSON array; the hash keeps any session key a safe file name.
// Losing them costs only a repeat, so a file that does not parse reads as
// empty, and they are written as a cache is (fileio.WriteCache: replaced
// whole by a rename, not synced): a crash of the machine may cost a repeat,
// and each session start and prompt that shows rows saves the two fsyncs
// (docs/PERFORMANCE.md, row 25). Each session's hooks run one after
// another, so the read and the write of AddSessionMarks need no lock.
const hookStateDir = ".state/hooks"

func sessionMarksPath(v *vault.Vault, t transcript.Ref) string {
	sum := sha256.Sum256([]byte(t.Agent + "\x00" + t.Session))
	return filepath.Join(v.Root, filepath.FromSlash(hookStateDir), hex.EncodeToString(sum[:12])+".json")
}

// SessionMarks returns the ids marked for session t, empty when none are.
func SessionMarks(v *vault.Vault, t transcript.Ref) (map[string]bool, error) {
	m := map[string]bool{}
	data, err := v.Files().ReadFile(sessionMarksPath(v, t))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fault.IO("read session marks", err)
	}
	var ids []string
	_ = json.Unmarshal(data, &ids)
	for _, id := range ids {
		m[id] = true
	}
	return m, nil
}

// AddSessionMarks adds ids to the marks of session t.
func AddSessionMarks(v *vault.Vault, t transcript.Ref, ids ...string) error {
	m, err := SessionMarks(v, t)
	if err != nil {
		return err
	}
	added := 0
	for _, id := range ids {
		if !m[id] {
			m[id] = true
			added++
		}
	}
	if added == 0 {
		return nil // nothing new: no write
	}
	all := make([]string, 0, len(m))
	for id := range m {
		all = append(all, id)
	}
	sort.Strings(all)
	data, err := json.Marshal(all)
	if err != nil {
		return err
	}
	return v.Files().WriteCache(sessionMarksPath(v, t), data)
}

// ResetSessionMarks forgets the marks of session t (the hooks do when the
// harness compacts: what the session was shown is gone from its context).
func ResetSessionMarks(v *vault.Vault, t transcript.Ref) error {
	if err := v.Files().Remove(sessionMarksPath(v, t)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fault.IO("reset session marks", err)
	}
	return nil
}
