package gitrepo

// Fetch and push for a sync, with either engine: the git binary, whose
// transports cover everything git users configure (ssh with their agent,
// credential helpers, proxies), or go-git, which needs nothing installed.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/memvault/memvault/vault/fault"
)

// The engines a sync can run with.
const (
	EngineGit   = "git"
	EngineGoGit = "go-git"
)

// ErrPushRejected means the remote's branch moved after the fetch, so the
// push would not fast-forward it: fetch and merge again.
var ErrPushRejected = errors.New("push rejected: the remote's branch moved since the fetch")

// goGitRemoteName is the name go-git's remote gets for a URL that has no
// name; it is never written to .git/config.
const goGitRemoteName = "memvault-sync"

// Fetch fetches branch of rm into rm.TrackingRef(branch) and returns the
// remote's commit, or the zero hash when the remote has no such branch (an
// empty repository, for instance). ctx bounds the network: a fetch that
// outlives it fails as unreachable.
func (r *Repo) Fetch(ctx context.Context, engine string, rm Remote, branch string, who Signature) (plumbing.Hash, error) {
	track := rm.TrackingRef(branch)
	spec := "+refs/heads/" + branch + ":" + track.String()
	var err error
	var missing bool
	if engine == EngineGit {
		missing, err = r.fetchGit(ctx, rm, spec, who)
	} else {
		missing, err = r.fetchGoGit(ctx, rm, spec)
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if missing {
		return plumbing.ZeroHash, nil
	}
	return r.refValue(track)
}

func (r *Repo) fetchGit(ctx context.Context, rm Remote, spec string, who Signature) (missing bool, err error) {
	out, err := r.runGit(ctx, who, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", rmArg(rm), spec)
	switch {
	case err == nil:
		return false, nil
	case strings.Contains(out, "couldn't find remote ref"):
		return true, nil
	}
	return false, unreachable(ctx, rm, gitMessage(out), err)
}

func (r *Repo) fetchGoGit(ctx context.Context, rm Remote, spec string) (missing bool, err error) {
	installFileTransport()
	name := rm.Name
	if name == "" {
		name = goGitRemoteName
	}
	remote := git.NewRemote(r.st, &config.RemoteConfig{Name: name, URLs: []string{rm.URL}})
	err = remote.FetchContext(ctx, &git.FetchOptions{RemoteName: name, RefSpecs: []config.RefSpec{config.RefSpec(spec)},
		Tags: git.NoTags, Force: true})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return false, nil
	case errors.Is(err, transport.ErrEmptyRemoteRepository), errors.Is(err, git.NoMatchingRefSpecError{}):
		return true, nil
	}
	return false, unreachable(ctx, rm, err.Error(), err)
}

// rmArg is how git is told the remote: by name when it has one, so that
// the remote's own configuration (proxy, push URL) applies.
func rmArg(rm Remote) string {
	if rm.Name != "" {
		return rm.Name
	}
	return rm.URL
}

// unreachable classifies a failed fetch: the remote did not answer in
// time, or answered with an error (no such repository, refused, …).
func unreachable(ctx context.Context, rm Remote, msg string, err error) error {
	e := &fault.Error{Class: fault.ErrRemote, Err: err}
	if ctx.Err() != nil {
		e.Msg = fmt.Sprintf("sync: remote %s did not answer in time", rm)
	} else {
		e.Msg = fmt.Sprintf("sync: remote %s is unreachable: %s", rm, oneLine(msg))
	}
	if rm.Name != "" {
		e.Hint = fmt.Sprintf("check its URL (%s) and that it is up; git remote -v lists the remotes", rm.URL)
	} else {
		e.Hint = "check the URL or path, and that the remote is up"
	}
	return e
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Push sets branch on rm to the local branch's commit, if that
// fast-forwards it. A remote that moved since the fetch gives
// ErrPushRejected; a remote that refuses for another reason (a non-bare
// repository with the branch checked out, no permission) is ErrRemote.
func (r *Repo) Push(ctx context.Context, engine string, rm Remote, branch string, who Signature) error {
	if engine == EngineGit {
		return r.pushGit(ctx, rm, branch, who)
	}
	return r.pushGoGit(ctx, rm, branch)
}

func (r *Repo) pushGit(ctx context.Context, rm Remote, branch string, who Signature) error {
	ref := "refs/heads/" + branch
	out, err := r.runGit(ctx, who, "push", "--porcelain", "--no-verify", rmArg(rm), ref+":"+ref)
	if err == nil {
		return nil
	}
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "!\t") {
			continue
		}
		if strings.Contains(l, "[rejected]") {
			return ErrPushRejected
		}
		return refused(rm, l[strings.LastIndexByte(l, '\t')+1:])
	}
	if ctx.Err() == nil && isExit(err) && strings.Contains(out, "[rejected]") {
		return ErrPushRejected
	}
	return unreachable(ctx, rm, gitMessage(out), err)
}

func (r *Repo) pushGoGit(ctx context.Context, rm Remote, branch string) error {
	installFileTransport()
	name := rm.Name
	if name == "" {
		name = goGitRemoteName
	}
	ref := "refs/heads/" + branch
	remote := git.NewRemote(r.st, &config.RemoteConfig{Name: name, URLs: []string{rm.URL}})
	err := remote.PushContext(ctx, &git.PushOptions{RemoteName: name, RefSpecs: []config.RefSpec{config.RefSpec(ref + ":" + ref)}})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil
	case errors.Is(err, git.ErrNonFastForwardUpdate), errors.Is(err, git.ErrForceNeeded),
		strings.Contains(err.Error(), errNotFastForward.Error()):
		return ErrPushRejected
	case strings.Contains(err.Error(), errCheckedOut.Error()):
		return refused(rm, errCheckedOut.Error())
	}
	return unreachable(ctx, rm, err.Error(), err)
}

// refused is a push the remote turned down for a reason a retry does not
// change.
func refused(rm Remote, why string) error {
	e := fault.New(fault.ErrRemote, "sync: remote %s refused the push: %s", rm, oneLine(why))
	if strings.Contains(why, "checked out") {
		return e.WithHint("push to a bare repository (git init --bare), or pull only with memvault sync --no-push")
	}
	return e.WithHint("check your rights on the remote")
}
