package vault

import (
	"fmt"
)

// Health is what a writer would find wrong with the vault before writing:
// the cheap chain check every transaction runs (checkchain.go) and
// the configuration. A vault in bad health still captures transcripts;
// structured writes are refused until it is repaired. Status, doctor and
// the session-start context report it, so the need for a repair is never
// silent.
type Health struct {
	Chain  []Problem // what the writers' chain check found, first first
	Config error     // why memvault.toml could not be read (OpenForCapture)
}

// OK reports whether writes would be accepted.
func (h Health) OK() bool { return len(h.Chain) == 0 && h.Config == nil }

// Summary is one line naming the first problem and what to do about it;
// "" when the vault is healthy.
func (h Health) Summary() string {
	switch {
	case h.Config != nil:
		return fmt.Sprintf("memvault.toml does not parse (%v): only transcripts are being captured; fix the file by hand", h.Config)
	case len(h.Chain) > 0 && h.Chain[len(h.Chain)-1].File == mergeHeadFile && len(h.Chain) == 1:
		return "a git merge is in progress in the vault: only transcripts are being captured until it is concluded (git commit, after memvault repair if the ledger conflicts) or undone (git merge --abort)"
	case len(h.Chain) > 0:
		more := ""
		if len(h.Chain) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(h.Chain)-1)
		}
		return fmt.Sprintf("the ledger needs repair: %s%s; only transcripts are being captured until `memvault repair` is run", h.Chain[0], more)
	}
	return ""
}

// Health runs the writers' check without taking the lock or saving
// anything: on a vault whose segments are unchanged since the last write it
// costs one stat per segment.
func (v *Vault) Health() (Health, error) {
	h := Health{Config: v.configErr}
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		return h, err
	}
	_, problems, _, err := v.checkChain(segs)
	if err != nil {
		return h, err
	}
	h.Chain = problems
	return h, nil
}
