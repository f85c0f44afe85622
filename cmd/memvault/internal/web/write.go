package web

import (
	"net/http"

	"github.com/memvault/memvault/cmd/memvault/internal/ops"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/heads"
)

// The writes, with --write only: closing a commitment and resolving a
// head's conflicts, each one transaction through the call its command
// makes (`memvault commitment close`, `memvault resolve`). A write needs
// the token like every request, an Origin header that is this server's,
// and the CSRF token of the form a page of this server rendered; it waits
// a moment for the vault lock and answers 503 when the vault stays busy.
// After a close, the heads are brought up to date off the request's path,
// as after every write of a front end (hooks/afterwrite.go); a resolve
// writes the head itself.

// write turns a write into a route: it checks the request came from a
// page of this server, then runs fn, which returns where to go next.
func (s *Server) write(fn func(r *http.Request) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) {
			forbid(w, "a write must come from a page of this server (Origin)")
			return
		}
		if err := r.ParseForm(); err != nil || !same(r.PostForm.Get("csrf"), s.csrf) {
			forbid(w, "a write must come from a form of this server (CSRF token)")
			return
		}
		next, err := fn(r)
		if err != nil {
			s.render(w, errorView(err), nil)
			return
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
	}
}

// txOptions are the options of a write made for a page.
func (s *Server) txOptions(agent, command string) vault.TxOptions {
	return vault.TxOptions{Command: "serve " + command, Agent: agent, LockTimeout: s.opts.LockWait}
}

func (s *Server) closeCommitment(r *http.Request) (string, error) {
	v, agent, err := s.open(false)
	if err != nil {
		return "", err
	}
	id, note := r.PathValue("id"), r.PostForm.Get("note")
	res, err := v.Update(s.txOptions(agent, "commitment close"), func(tx *vault.Tx) error {
		_, err := ops.CloseCommitment(tx, id, note)
		return err
	})
	if err != nil {
		return "", err
	}
	s.opts.Refresh.After(v, res.Commit) // the heads that listed the commitment
	return "/", nil
}

func (s *Server) resolveHead(r *http.Request) (string, error) {
	head, take := r.PostForm.Get("head"), r.PostForm.Get("take")
	if _, _, err := headPath(head); err != nil {
		return "", fault.New(vault.ErrInvalid, "resolve: head %q: not a head", head)
	}
	v, agent, err := s.open(false)
	if err != nil {
		return "", err
	}
	if _, err := heads.ResolveHeads(v, head, take, s.txOptions(agent, "resolve")); err != nil {
		return "", err
	}
	return headURL(head), nil
}
