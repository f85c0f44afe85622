package gitrepo

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memvault/memvault/vault/fault"
)

// BlobHash is the hash git gives data as a blob. The heads record it for
// the render they wrote, so that the render can be read back as the base of
// a three-way merge, from git or from .rendered/.
func BlobHash(data []byte) string {
	return plumbing.ComputeHash(plumbing.BlobObject, data).String()
}

// Blob reads a blob by its full hash, loose or packed; false when git has
// no such blob (gc pruned it, or the hash names something else). Callers
// treat a missing base as none, so the cause does not matter to them.
func (r *Repo) Blob(hash string) ([]byte, bool) {
	if len(hash) != 40 {
		return nil, false
	}
	obj, err := r.st.EncodedObject(plumbing.BlobObject, plumbing.NewHash(hash))
	if err != nil {
		return nil, false
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, false
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	return data, err == nil
}

// BlobAt returns the blob hash of file p at commit rev ("" = HEAD), and
// false when p is not a file there (or there is no commit yet): it tells a
// hand edit nobody committed from the committed text.
func (r *Repo) BlobAt(rev, p string) (string, bool, error) {
	tree, err := r.TreeAt(rev)
	if err != nil || tree == nil {
		return "", false, err
	}
	e, err := tree.FindEntry(p)
	if err != nil {
		return "", false, nil
	}
	return e.Hash.String(), true, nil
}

// TreeAt returns the tree of commit rev ("" = HEAD; nil before the first
// commit), so that the vault can be read as it was (render --at); see
// Resolve for the forms rev may take.
func (r *Repo) TreeAt(rev string) (*object.Tree, error) {
	var h plumbing.Hash
	var err error
	if rev == "" {
		if h, err = r.Head(); err != nil || h.IsZero() {
			return nil, err
		}
	} else if h, err = r.Resolve(rev); err != nil {
		return nil, err
	}
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		return nil, &fault.Error{Class: fault.ErrCorrupt, Msg: "git: read commit " + h.String() + ": " + err.Error(), Err: err}
	}
	t, err := c.Tree()
	if err != nil {
		return nil, &fault.Error{Class: fault.ErrCorrupt, Msg: "git: read tree of " + h.String() + ": " + err.Error(), Err: err}
	}
	return t, nil
}

// Resolve finds a commit by the forms `memvault log` shows and people type:
// a full hash, a hash prefix of at least four characters (looked up along
// the branch's first-parent history, an error when ambiguous there), HEAD
// or @, a branch name, each optionally followed by ~ or ~N (first parents).
//
// go-git's Repository.ResolveRevision is not used: it answers differently
// for all but the ~N walk. It accepts many more forms (tags, ^, ^{/text}),
// searches every object for a prefix and takes the first match instead of
// reporting an ambiguity, prefers a hash prefix over a branch of that name,
// peels tags and resolves a detached HEAD; and its package would bring
// go-git's network transports (ssh and the rest) into the binary for a
// loop of a few lines. TestResolveForms holds the accepted forms to this
// list.
func (r *Repo) Resolve(rev string) (plumbing.Hash, error) {
	notFound := func() error {
		e := fault.New(fault.ErrNotFound, "commit %q: not found in the vault", rev)
		return e.WithHint("name a commit from memvault log: a hash, HEAD or HEAD~N")
	}
	base, n := rev, 0
	if b, k, ok := strings.Cut(rev, "~"); ok {
		base = b
		if k == "" {
			n = 1
		} else if _, err := fmt.Sscanf(k, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != k {
			return plumbing.ZeroHash, notFound()
		}
	}
	var h plumbing.Hash
	switch {
	case base == "HEAD" || base == "@":
		head, err := r.Head()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		h = head
	case len(base) == 40 && isHex(base):
		h = plumbing.NewHash(base)
	default:
		if ref, err := r.refValue(plumbing.NewBranchReferenceName(base)); err == nil && !ref.IsZero() {
			h = ref
			break
		}
		if len(base) < 4 || !isHex(base) {
			return plumbing.ZeroHash, notFound()
		}
		var found []plumbing.Hash
		err := r.Log(func(ci CommitInfo) bool {
			if strings.HasPrefix(ci.Hash, strings.ToLower(base)) {
				found = append(found, plumbing.NewHash(ci.Hash))
			}
			return len(found) < 2
		})
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if len(found) > 1 {
			return plumbing.ZeroHash, fault.New(fault.ErrInvalid, "commit %q: ambiguous, give more characters", rev)
		}
		if len(found) == 0 {
			return plumbing.ZeroHash, notFound()
		}
		h = found[0]
	}
	for ; n > 0; n-- {
		c, err := object.GetCommit(r.st, h)
		if err != nil || len(c.ParentHashes) == 0 {
			return plumbing.ZeroHash, notFound()
		}
		h = c.ParentHashes[0]
	}
	if h.IsZero() {
		return plumbing.ZeroHash, notFound()
	}
	if _, err := object.GetCommit(r.st, h); err != nil {
		return plumbing.ZeroHash, notFound()
	}
	return h, nil
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// TreeLinks lists the entries of tree git stores as symbolic links (mode
// 120000), sorted: what a checkout of it would make links of.
func TreeLinks(tree *object.Tree) ([]string, error) {
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
