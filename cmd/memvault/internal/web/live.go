package web

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/tjournal"
)

// Live updates (docs/WEB.md, "Live updates"): each page carries the
// vault's version as it was when the page was read, in
// <meta name="memvault-version">; the one script the server serves
// (static/live.js) asks GET /live every few seconds with that version in
// If-None-Match, and gets 304 while nothing changed. When the vault moved
// on it fetches the page again and swaps its <main> for the new one: a row
// written while the page is open appears without a reload. A page works
// the same without the script; it is just not updated.
//
// Polling, not server-sent events: a poll is one short request, so a tab
// left open holds no connection (a browser opens at most six to a host,
// and a shutdown would wait on every open stream), and the version costs
// a few small reads, not a fold: the branch's commit (every write to the
// ledger, the heads and the nodes is a commit) and the transcript
// journal's size and time (a transcript's append is journalled before it
// is committed).

// liveVersion is the vault's version: a hash of the branch's commit as
// .git names it (HEAD, the loose ref or packed-refs) and of the size and
// modification time of the transcript journal, MEMORY.md and CONTINUITY.md. It reads no object, no ledger
// segment and no cache: a poll of a vault that did not change costs these
// reads and stats.
func liveVersion(root string) (string, error) {
	files := fileio.At(root)
	gitDir := filepath.Join(root, ".git")
	h := sha256.New()
	head, err := files.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", err
	}
	h.Write(head)
	if ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: "); ok && fileio.CheckName("ref", filepath.Base(ref)) == nil &&
		strings.HasPrefix(ref, "refs/heads/") && !strings.Contains(ref, "..") {
		if tip, err := files.ReadFile(filepath.Join(gitDir, filepath.FromSlash(ref))); err == nil {
			h.Write(tip)
		} else if fi, err := files.Stat(filepath.Join(gitDir, "packed-refs")); err == nil {
			// A packed ref: packed-refs is rewritten whenever a ref in it moves.
			h.Write([]byte(strconv.FormatInt(fi.Size(), 10) + " " + strconv.FormatInt(fi.ModTime().UnixNano(), 10)))
		}
	}
	// The journal; then the two heads a person edits most, whose saved
	// edit is on the page before anything commits it.
	for _, p := range []string{tjournal.Path(root), filepath.Join(root, vault.MemoryHead), filepath.Join(root, vault.ContinuityHead)} {
		h.Write([]byte{0})
		if fi, err := files.Stat(p); err == nil {
			h.Write([]byte(strconv.FormatInt(fi.Size(), 10) + " " + strconv.FormatInt(fi.ModTime().UnixNano(), 10)))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// live answers GET /live: the vault's version as an ETag, 304 when the
// request's If-None-Match names it. It sits behind the guard like every
// route (the token or its cookie, the Host check) and answers only a
// request the page's own script made: a browser's fetch from another site
// says so in Sec-Fetch-Site and is refused, though the version tells
// nothing but that the vault changed.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		forbid(w, "the live updates answer this server's own pages only")
		return
	}
	version, err := liveVersion(s.opts.Root)
	if err != nil {
		http.Error(w, "memvault: live: the vault's version: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	etag := `"` + version + `"`
	w.Header().Set("ETag", etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(version + "\n"))
}
