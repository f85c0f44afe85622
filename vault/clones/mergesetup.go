package clones

import (
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
)

// The merge driver's setup in a vault: git is told to merge the vault's
// files with memvault's driver (gitrepo registers it in .git/config), and
// .gitattributes, a vault file, names the files it merges.

// EnsureMergeSetup makes git merge the vault with memvault's driver: it
// registers the driver for bin in .git/config and, when .gitattributes is
// missing or lacks memvault's lines, adds them and commits the file in a
// transaction of its own. It reports what it changed (as
// gitrepo.MergeSetupPending names them). A vault whose ledger fails verification
// still gets them: they are what lets the next merge go right.
func EnsureMergeSetup(v *vault.Vault, bin string) (changed []string, err error) {
	if ok, err := gitrepo.RegisterMergeDrivers(v.Root, bin); err != nil {
		return nil, err
	} else if ok {
		changed = append(changed, ".git/config")
	}
	attrs, err := gitrepo.ReadAttributes(v.Root)
	if err != nil || gitrepo.WithAttributes(attrs) == nil {
		return changed, err
	}
	_, err = v.Update(vault.TxOptions{Command: "merge setup", Force: true}, func(tx *vault.Tx) error {
		// Read again under the lock: another process may have done it.
		if added, err := addMergeAttributes(tx); err != nil || !added {
			return err
		}
		tx.Subject("merge: memvault's merge driver in " + gitrepo.GitattributesFile)
		return nil
	})
	if err != nil {
		return changed, err
	}
	return append(changed, gitrepo.GitattributesFile), nil
}

// addMergeAttributes queues, in tx, .gitattributes with the lines of
// memvault's merge driver it lacks (the person's lines kept above them),
// and reports whether it did: for a writer that sets a fresh clone up in a
// transaction it runs anyway. It does not register the driver in
// .git/config, which is no vault file (gitrepo.RegisterMergeDrivers).
func addMergeAttributes(tx *vault.Tx) (bool, error) {
	attrs, err := gitrepo.ReadAttributes(tx.Vault().Root)
	if err != nil {
		return false, err
	}
	out := gitrepo.WithAttributes(attrs)
	if out == nil {
		return false, nil
	}
	tx.WriteFile(vault.MustRel(gitrepo.GitattributesFile), out)
	return true, nil
}
