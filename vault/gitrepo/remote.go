package gitrepo

// The remote a sync talks to: a remote configured in .git/config, or a URL
// or path given on the command line, and the ref its branch is fetched
// into.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memvault/memvault/vault/fault"
)

// Remote is where a sync fetches from and pushes to.
type Remote struct {
	// Name is the remote's name in .git/config; "" when it was given as a
	// URL or a path.
	Name string `json:"name,omitempty"`
	// URL is the configured or given URL; a local path is absolute.
	URL string `json:"url"`
}

// String names the remote the way a person wrote it.
func (rm Remote) String() string {
	if rm.Name != "" {
		return rm.Name
	}
	return rm.URL
}

// TrackingRef is where the remote's branch is fetched into: the usual
// remote-tracking ref of a configured remote, or, for a URL that has no
// name, refs/memvault/sync/<branch>, which the next sync of that branch
// overwrites.
func (rm Remote) TrackingRef(branch string) plumbing.ReferenceName {
	if rm.Name != "" {
		return plumbing.ReferenceName("refs/remotes/" + rm.Name + "/" + branch)
	}
	return plumbing.ReferenceName("refs/memvault/sync/" + branch)
}

// LocalPath returns the folder a remote URL names on this machine (a path
// or a file:// URL), or "" for a network URL.
func (rm Remote) LocalPath() string {
	u := rm.URL
	if p, ok := strings.CutPrefix(u, "file://"); ok {
		return p
	}
	if strings.Contains(u, "://") || isSCPLike(u) {
		return ""
	}
	return u
}

// isSCPLike reports git's host:path form (git@example.com:vault.git),
// which a local path never has before its first slash.
func isSCPLike(u string) bool {
	colon := strings.IndexByte(u, ':')
	slash := strings.IndexByte(u, '/')
	return colon > 0 && (slash < 0 || colon < slash)
}

// NoRemoteHint is what to do when the vault has no remote at all.
func NoRemoteHint(root string) string {
	return fmt.Sprintf("add one: git -C %s remote add origin URL", root)
}

// ResolveRemote finds the remote a sync of branch uses. arg is what the
// person named: a configured remote, a URL or a path (relative to the
// working directory). Without arg it is the branch's upstream remote
// (branch.<name>.remote), else origin.
func (r *Repo) ResolveRemote(arg, branch string) (Remote, error) {
	cfg, err := r.st.Config()
	if err != nil {
		return Remote{}, &fault.Error{Class: fault.ErrCorrupt, Msg: "git: read .git/config: " + err.Error(), Err: err}
	}
	named := func(name string) (Remote, bool) {
		rc, ok := cfg.Remotes[name]
		if !ok || len(rc.URLs) == 0 {
			return Remote{}, false
		}
		return Remote{Name: name, URL: r.absURL(rc.URLs[0], r.root)}, true
	}
	if arg == "" {
		if b, ok := cfg.Branches[branch]; ok && b.Remote != "" && b.Remote != "." {
			if rm, ok := named(b.Remote); ok {
				return rm, nil
			}
		}
		if rm, ok := named("origin"); ok {
			return rm, nil
		}
		e := fault.New(fault.ErrRemote, "sync: the vault has no remote: no upstream for %s and no origin", branch)
		return Remote{}, e.WithHint("%s", NoRemoteHint(r.root))
	}
	if rm, ok := named(arg); ok {
		return rm, nil
	}
	rm := Remote{URL: arg}
	if rm.LocalPath() == "" {
		return rm, nil // a network URL: the fetch finds out whether it answers
	}
	wd, _ := os.Getwd()
	rm.URL = r.absURL(arg, wd)
	if _, err := os.Stat(rm.LocalPath()); err != nil {
		e := fault.New(fault.ErrRemote, "sync: %s: no such remote, and no repository at that path", arg)
		return Remote{}, e.WithHint("git -C %s remote -v lists the remotes; or name a URL or a path", r.root)
	}
	return rm, nil
}

// absURL makes a local path absolute against dir, as git resolves a
// relative remote path against the folder it runs in; URLs are kept.
func (r *Repo) absURL(u, dir string) string {
	rm := Remote{URL: u}
	p := rm.LocalPath()
	if p == "" || filepath.IsAbs(p) {
		return u
	}
	return filepath.Join(dir, p)
}
