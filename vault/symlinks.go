package vault

// Symbolic links in the vault. memvault never follows one below the vault's
// root (fileio.Root refuses them at every open); this file finds them, for
// verify and doctor, which name each, and for sync, which refuses a
// remote's tree that would bring one in. docs/specs/STORAGE.md ("Links")
// is the contract.

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// linkMsg is what verify says about a link.
const linkMsg = "is a symbolic link; memvault never follows links inside the vault (replace it with what it points to, or git rm it)"

// WalkFiles calls fn for everything below the vault folder rel (slash
// separated, "" for the root), parents before children, with p the
// absolute path. It lists folders through the vault's Root and never
// descends into a link: fn sees the link itself (d.Type() says so). A
// folder that does not exist has nothing to walk.
// fn may return fs.SkipDir to leave a folder out.
func (v *Vault) WalkFiles(rel string, fn func(p string, d fs.DirEntry) error) error {
	entries, err := v.Files().ReadDir(v.slashAbs(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		sub := path.Join(rel, e.Name())
		err := fn(v.slashAbs(sub), e)
		if errors.Is(err, fs.SkipDir) {
			continue
		}
		if err != nil {
			return err
		}
		if e.IsDir() {
			if err := v.WalkFiles(sub, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// slashAbs is the absolute path of the slash path rel below the root.
func (v *Vault) slashAbs(rel string) string {
	return filepath.Join(v.Root, filepath.FromSlash(rel))
}

// LinksOnDisk lists the symbolic links below the vault's root, as slash
// paths, sorted. .git is git's and not walked: no clone can bring a link
// into it.
func (v *Vault) LinksOnDisk() ([]string, error) {
	var out []string
	err := v.WalkFiles("", func(p string, d fs.DirEntry) error {
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

// treeLinks lists the entries of tree git stores as symbolic links (mode
// 120000), sorted.
func treeLinks(tree *object.Tree) ([]string, error) {
	if tree == nil {
		return nil, nil
	}
	var out []string
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &fault.Error{Class: fault.ErrCorrupt, Msg: "git: walk tree: " + err.Error(), Err: err}
		}
		if e.Mode == filemode.Symlink {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// LinksCommitted lists the symbolic links HEAD's tree holds.
func (v *Vault) LinksCommitted() ([]string, error) {
	tree, err := v.Repo.TreeAt("")
	if err != nil {
		return nil, err
	}
	return treeLinks(tree)
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
	return v.WalkFiles(filepath.ToSlash(rel), func(p string, d fs.DirEntry) error {
		if d.Type()&fs.ModeSymlink != 0 {
			return v.Files().Check(p)
		}
		return nil
	})
}

// RefuseTreeLinks refuses a tree that holds symbolic links: what sync would
// bring into the vault from a remote. what names the tree in the error.
func RefuseTreeLinks(tree *object.Tree, what string) error {
	links, err := treeLinks(tree)
	if err != nil || len(links) == 0 {
		return err
	}
	e := fault.New(ErrCorrupt, "sync: %s holds symbolic links (%s); memvault never brings a link into the vault; nothing was changed", what, strings.Join(links, ", "))
	return e.WithHint("remove the links from the remote's branch (git rm, commit, push), then sync again")
}
