package ops

import (
	"errors"
	"io/fs"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/heads"
)

// HeadText is a head as it stands in the vault: the file, hand edits
// included; a head never written (or deleted) is rendered from the
// ledger without writing it, and rendered says so. th is the head's
// thread for a thread head.
func HeadText(v *vault.Vault, head string, th vault.Thread) (text []byte, rendered bool, err error) {
	data, err := v.ReadFile(head)
	if err == nil {
		return data, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fault.IO("read "+head, err)
	}
	if head == vault.ContinuityHead {
		doc, err := continuity.RenderContinuity(v)
		if err != nil {
			return nil, false, err
		}
		return doc.Bytes, true, nil
	}
	opts := heads.RenderOptions{Memory: head == vault.MemoryHead}
	if !opts.Memory {
		opts.Threads = []vault.Thread{th}
	}
	docs, err := heads.RenderHeads(v, opts)
	if err != nil {
		return nil, false, err
	}
	return docs[0].Bytes, true, nil
}

// HeadVersion is one commit that changed a file, and the file's blob
// after it ("" when the commit removed it).
type HeadVersion struct {
	gitrepo.CommitInfo
	Blob string `json:"blob"`
}

// HeadHistory lists the commits of the vault's first-parent lineage that
// changed file path, newest first, at most max of them, looking at no
// more than scan commits (0: all). A commit changed the file when the
// file's blob there differs from its parent's; complete is false when the
// scan stopped before the first commit.
func HeadHistory(v *vault.Vault, path string, max, scan int) (versions []HeadVersion, complete bool, err error) {
	var pending *HeadVersion // the newer commit, waiting for its parent's blob
	seen := 0
	complete = true
	var readErr error
	err = v.Log(func(ci gitrepo.CommitInfo) bool {
		if scan > 0 && seen == scan {
			complete = false
			return false
		}
		seen++
		blob, _, err := v.Repo.BlobAt(ci.Hash, path)
		if err != nil {
			readErr = err
			return false
		}
		if pending != nil && pending.Blob != blob {
			versions = append(versions, *pending)
			if max > 0 && len(versions) == max {
				pending, complete = nil, false
				return false
			}
		}
		pending = &HeadVersion{CommitInfo: ci, Blob: blob}
		return true
	})
	if err == nil {
		err = readErr
	}
	if err != nil {
		return nil, false, err
	}
	// The oldest commit looked at changed the file if it holds it and the
	// walk reached the first commit.
	if pending != nil && complete && pending.Blob != "" {
		versions = append(versions, *pending)
	}
	return versions, complete, nil
}

// FileAt is file path as commit rev has it (any form gitrepo resolves: a
// hash or a unique prefix of one); ErrNotFound when rev names no commit or
// the file is not there.
func FileAt(v *vault.Vault, rev, path string) ([]byte, error) {
	blob, ok, err := v.Repo.BlobAt(rev, path)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.New(vault.ErrNotFound, "%s at %s: not in that commit", path, rev)
	}
	data, ok := v.Repo.Blob(blob)
	if !ok {
		return nil, fault.New(vault.ErrNotFound, "%s at %s: its blob is gone", path, rev)
	}
	return data, nil
}
