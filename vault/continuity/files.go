package continuity

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/transcript"
)

// Files Being Modified: the files the last sessions' edit tools wrote,
// those of this session first, then those of earlier sessions, newest
// first, each once. A file not written for filesDays days before the
// newest session's day has aged out (the protocol's working memory holds
// a week); at most filesKept are kept.
const (
	filesDays = 7
	filesKept = 10
)

// keepFiles folds the files a session ended on day wrote.
func (c *Continuity) keepFiles(touched []string, day string) {
	files, days := []string{}, []string{}
	seen := map[string]bool{}
	add := func(f, d string) {
		if f == "" || seen[f] || len(files) >= filesKept {
			return
		}
		seen[f] = true
		files, days = append(files, f), append(days, d)
	}
	for _, f := range touched {
		add(f, day)
	}
	for i, f := range c.Files {
		d := day
		if i < len(c.FileDays) {
			d = c.FileDays[i]
		}
		if daysBetween(d, day) <= filesDays {
			add(f, d)
		}
	}
	c.Files, c.FileDays = files, days
}

// session folds a session end: its working context, its files.
func (c *Continuity) session(d contData) {
	c.Iteration++
	if d.Context != nil {
		c.Context = d.Context
	}
	if d.Files != nil {
		c.Files, c.FileDays = d.Files, make([]string, len(d.Files))
		for i := range c.FileDays {
			c.FileDays[i] = d.Date
		}
	}
	if d.Touched != nil {
		c.keepFiles(d.Touched, d.Date)
	}
}

// sessionFiles are the files the session's edit tools wrote (Edit, Write,
// apply_patch, … of every harness: transcript.Work), read from its stored
// transcript: paths inside the project relative to its root, the vault's
// own files left out. No transcript, no files (nil).
func sessionFiles(v *vault.Vault, agent, session string) []string {
	if agent == "" {
		agent = v.Config.Agent
	}
	var w transcript.Work
	if err := transcript.Read(v.Files(), transcript.Ref{Agent: agent, Session: session}, 0, 0, func(m transcript.Stored) error {
		w.Add(m.Message)
		return nil
	}); err != nil {
		return nil
	}
	root := filepath.Dir(v.Root)
	out := []string{}
	for _, f := range w.Files {
		if filepath.IsAbs(f) {
			if in, err := filepath.Rel(v.Root, f); err == nil && !strings.HasPrefix(in, "..") {
				continue // memory, not work
			}
			if rel, err := filepath.Rel(root, f); err == nil && !strings.HasPrefix(rel, "..") {
				f = rel
			}
		}
		f = filepath.ToSlash(filepath.Clean(f))
		if f != "." && !strings.ContainsAny(f, "\n\r\x00") && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}
