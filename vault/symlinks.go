package vault

// Symbolic links in the vault. memvault never follows one below the vault's
// root (fileio.Root refuses them at every open); this file finds them, for
// verify and doctor, which name each. Sync refuses a remote's tree that
// would bring one in (vault/clones, through gitrepo.TreeLinks).
// docs/specs/STORAGE.md ("Links") is the contract.

import (
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/gitrepo"
)

// linkMsg is what verify says about a link.
const linkMsg = "is a symbolic link; memvault never follows links inside the vault (replace it with what it points to, or git rm it)"

// LinksOnDisk lists the symbolic links below the vault's root, as slash
// paths, sorted. .git is git's and not walked: no clone can bring a link
// into it.
func (v *Vault) LinksOnDisk() ([]string, error) {
	var out []string
	err := v.Files().Walk("", func(p string, d fs.DirEntry) error {
		rel, err := filepath.Rel(v.Root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == ".git" {
			return fs.SkipDir
		}
		if d.Type()&fs.ModeSymlink != 0 {
			out = append(out, rel)
		}
		return nil
	})
	return out, err
}

// LinksCommitted lists the symbolic links HEAD's tree holds.
func (v *Vault) LinksCommitted() ([]string, error) {
	tree, err := v.Repo.TreeAt("")
	if err != nil {
		return nil, err
	}
	return gitrepo.TreeLinks(tree)
}

// IsLink reports whether the problem is a symbolic link in the vault,
// which repair does not fix: a person replaces or removes the link.
func (p Problem) IsLink() bool { return strings.HasPrefix(p.Msg, linkMsg) }

// LinkProblems names every symbolic link of the vault, one problem per
// path: on disk below the root, committed in HEAD's tree, or both. Verify
// and doctor report them.
func (v *Vault) LinkProblems() ([]Problem, error) {
	disk, err := v.LinksOnDisk()
	if err != nil {
		return nil, err
	}
	committed, err := v.LinksCommitted()
	if err != nil {
		return nil, err
	}
	where := map[string]string{}
	for _, p := range disk {
		where[p] = "on disk"
	}
	for _, p := range committed {
		if where[p] != "" {
			where[p] = "on disk and in HEAD (mode 120000)"
		} else {
			where[p] = "in HEAD (mode 120000)"
		}
	}
	var out []Problem
	for p, w := range where {
		out = append(out, Problem{File: p, Msg: linkMsg + "; " + w})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out, nil
}

// withLinks runs a verification and adds the vault's links to its report.
// A verification that could not read the ledger because of a link reports
// the links alone: they are the problem, and they are named.
func (v *Vault) withLinks(verify func() (*VerifyReport, error)) (*VerifyReport, error) {
	links, err := v.LinkProblems()
	if err != nil {
		return nil, err
	}
	rep, err := verify()
	if err != nil {
		if len(links) == 0 || !fileio.IsLink(err) {
			return nil, err
		}
		rep = &VerifyReport{}
	}
	rep.notes(v)
	if len(links) > 0 {
		rep.Problems = append(links, rep.Problems...)
		rep.OK = false
	}
	return rep, nil
}

// CheckNoLinksBelow refuses a link at the vault folder dir (an absolute
// path), above it, or anywhere in it: for folders handed whole to code
// that opens what is in them itself, the search index's library.
func (v *Vault) CheckNoLinksBelow(dir string) error {
	if err := v.Files().Check(dir); err != nil {
		return err
	}
	rel, err := filepath.Rel(v.Root, dir)
	if err != nil {
		return fault.IO("index "+dir, err)
	}
	return v.Files().Walk(filepath.ToSlash(rel), func(p string, d fs.DirEntry) error {
		if d.Type()&fs.ModeSymlink != 0 {
			return v.Files().Check(p)
		}
		return nil
	})
}
