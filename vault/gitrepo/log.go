package gitrepo

// The first-parent history as CommitInfo: subject, body and trailers.

import (
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memvault/memvault/vault/fault"
)

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// CommitInfo is one commit of the vault's lineage as `memvault log` shows
// it, its message split so that the trailers (Memvault-Agent, …) can be
// read as data.
type CommitInfo struct {
	Hash     string              `json:"hash"`
	Time     time.Time           `json:"time"`
	Author   string              `json:"author"`
	Subject  string              `json:"subject"`
	Body     string              `json:"body,omitempty"`
	Trailers map[string][]string `json:"trailers,omitempty"`
}

// parseMessage splits a message into subject, body and the trailer
// block (the last paragraph, when every line in it is "Key: value").
func parseMessage(msg string) (subject, body string, trailers map[string][]string) {
	msg = strings.TrimRight(msg, "\n")
	subject, rest, _ := strings.Cut(msg, "\n")
	rest = strings.Trim(rest, "\n")
	paras := strings.Split(rest, "\n\n")
	last := paras[len(paras)-1]
	t := make(map[string][]string)
	isTrailers := last != ""
	for _, line := range strings.Split(last, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			isTrailers = false
			break
		}
		t[k] = append(t[k], v)
	}
	if isTrailers {
		paras = paras[:len(paras)-1]
		trailers = t
	}
	return subject, strings.Join(paras, "\n\n"), trailers
}

// Log walks first parents from HEAD, yielding commits until fn returns
// false: the vault's lineage, newest first, as `memvault log` shows it.
func (r *Repo) Log(fn func(CommitInfo) bool) error {
	h, err := r.Head()
	if err != nil || h.IsZero() {
		return err
	}
	for !h.IsZero() {
		c, err := object.GetCommit(r.st, h)
		if err != nil {
			return &fault.Error{Class: fault.ErrCorrupt, Msg: "git: read commit " + h.String() + ": " + err.Error(), Err: err}
		}
		subject, body, trailers := parseMessage(c.Message)
		info := CommitInfo{Hash: h.String(), Time: c.Author.When, Author: c.Author.Name,
			Subject: subject, Body: body, Trailers: trailers}
		if !fn(info) {
			return nil
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return nil
}
