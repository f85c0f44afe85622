package gitrepo

// go-git's file transport runs git-upload-pack and git-receive-pack, the
// git binary's programs, so without git a sync to a local path or a
// file:// URL needs a server of its own: go-git's protocol server, run in
// the process, over the remote's folder. Its stock loader treats a
// non-bare repository's work tree as the git folder, and its ref updates
// are plain writes; the loader below finds the .git folder and updates a
// branch the way git does, under the ref's lock file and only when the new
// commit descends from the old one, so that two clones pushing at once can
// never make the remote lose a commit.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"

	"github.com/memvault/memvault/vault/fileio"
)

var (
	errNotFastForward = errors.New("non-fast-forward")
	errCheckedOut     = errors.New("branch is currently checked out")
)

// installFileTransport makes go-git serve file:// and local paths in the
// process. It is go-git's own table of transports, set once: the memvault
// process uses go-git's file transport for nothing else.
var installFileTransport = sync.OnceFunc(func() {
	client.InstallProtocol("file", localTransport{Transport: server.NewClient(localLoader{})})
})

// localTransport is go-git's in-process server with one fix: its
// upload-pack walks every commit the client says it has, and fails with
// "object not found" on one the server lacks, which is every fetch of a
// clone that has commits of its own. The session drops those before the
// server sees them, as git's upload-pack ignores them.
type localTransport struct{ transport.Transport }

func (t localTransport) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	st, err := localLoader{}.Load(ep)
	if err != nil {
		return nil, err
	}
	s, err := server.NewClient(server.MapLoader{ep.String(): st}).NewUploadPackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	return &knownHaves{UploadPackSession: s, st: st}, nil
}

type knownHaves struct {
	transport.UploadPackSession
	st storer.Storer
}

func (s *knownHaves) UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	haves := req.Haves[:0:0]
	for _, h := range req.Haves {
		if s.st.HasEncodedObject(h) == nil {
			haves = append(haves, h)
		}
	}
	req.Haves = haves
	return s.UploadPackSession.UploadPack(ctx, req)
}

// localLoader opens the repository at an endpoint's path: a bare one, or
// the .git folder of a non-bare one.
type localLoader struct{}

func (localLoader) Load(ep *transport.Endpoint) (storer.Storer, error) {
	p := ep.Path
	if info, err := os.Stat(filepath.Join(p, ".git")); err == nil && info.IsDir() {
		gitDir := filepath.Join(p, ".git")
		return &lockedRefs{objectStore: newStorage(gitDir), gitDir: gitDir, workTree: true}, nil
	}
	if _, err := os.Stat(filepath.Join(p, "HEAD")); err != nil {
		return nil, transport.ErrRepositoryNotFound
	}
	if _, err := os.Stat(filepath.Join(p, "objects")); err != nil {
		return nil, transport.ErrRepositoryNotFound
	}
	return &lockedRefs{objectStore: newStorage(p), gitDir: p}, nil
}

// lockedRefs is a repository's storage whose branch updates take git's ref
// lock and refuse anything but a fast-forward.
type lockedRefs struct {
	*objectStore
	gitDir   string
	workTree bool // a non-bare repository: its checked-out branch is not updated
}

// SetReference updates a branch as git's receive-pack does by default: not
// the branch a work tree has checked out (its files would no longer match),
// and only forward.
func (s *lockedRefs) SetReference(ref *plumbing.Reference) error {
	if !ref.Name().IsBranch() || ref.Type() != plumbing.HashReference {
		return s.Storage.SetReference(ref)
	}
	if s.workTree {
		if head, err := s.Storage.Reference(plumbing.HEAD); err == nil && head.Target() == ref.Name() {
			return errCheckedOut
		}
	}
	p := filepath.Join(s.gitDir, filepath.FromSlash(ref.Name().String()))
	if err := os.MkdirAll(filepath.Dir(p), fileio.DirPerm); err != nil {
		return err
	}
	lock := p + ".lock"
	f, err := createLockFileUntil(lock, time.Now().Add(2*time.Second))
	if err != nil {
		return fmt.Errorf("%s is locked: %w", ref.Name(), err)
	}
	done := false
	defer func() {
		f.Close()
		if !done {
			os.Remove(lock)
		}
	}()
	old, err := s.Storage.Reference(ref.Name())
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
	case err != nil:
		return err
	case old.Hash() != ref.Hash():
		ok, err := isAncestor(s.objectStore, old.Hash(), ref.Hash())
		if err != nil {
			return err
		}
		if !ok {
			return errNotFastForward
		}
	}
	if _, err := fmt.Fprintf(f, "%s\n", ref.Hash()); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := os.Rename(lock, p); err != nil {
		return err
	}
	done = true
	return nil
}
