package vault

// The spool: messages a hook could not store because the vault lock did not
// come within the hook's wait (docs/HOOKS.md, "Fail open";
// docs/specs/STORAGE.md, "The spool").
//
// A hook may not hold up the user's turn, so it waits for the vault lock
// 300 ms (a prompt) or 700 ms (a stop), and a render or a sync can hold the
// lock longer. A prompt or a reply that misses the lock is written, prepared
// and redacted as the transaction would have stored it, to a spool file of
// its session, without the vault lock: one O_APPEND write of whole records,
// fsynced. The next transaction of any writer folds the spool into the
// transcripts before it runs its own work, so a session's messages keep the
// order they came in.
//
// Exactly once, whatever is killed when:
//
//   - Appenders and the fold exclude each other through a second flock,
//     .locks/spool.lock: an appender holds it shared for its one write, the
//     fold exclusively for the instant it takes to rename each live spool
//     file to a claim (<session>.<n>.fold). A record is either in a live
//     file, which the next fold claims, or in a claim, which no appender
//     opens again.
//   - The fold queues the claims' records as transcript appends of the
//     transaction that folds, so they are written and, when it commits,
//     committed with it; a claim is removed only after the transaction has
//     succeeded. A transaction that fails leaves its claims for the next.
//   - A claim that was there before the transaction began may have been
//     folded already (a writer killed between its write and the removal):
//     its records are skipped when their message id is in the transcript.
//   - A record starts with a newline and ends with one, so a torn record (a
//     write cut short by a kill or a crash of the machine) only spoils its
//     own line: it is skipped, kept in .logs/ and reported, and the records
//     after it are read.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/transcript"
)

const (
	// SpoolDir holds the spool files: .spool/<agent>/<session>.jsonl, and
	// the claims of a fold, .spool/<agent>/<session>.<n>.fold.
	SpoolDir      = ".spool"
	spoolLockFile = ".locks/spool.lock"
	// spoolLockWait bounds both sides' wait for the spool lock. Its holders
	// keep it for one write and fsync, or for a few renames.
	spoolLockWait = 500 * time.Millisecond
	spoolVersion  = 1
	// spoolIgnore keeps the spool out of git in every vault, including those
	// whose .gitignore predates the spool: the folder ignores itself.
	spoolIgnore = "# memvault's spool: messages waiting for the vault lock, never committed\n*\n"
)

// spoolRecord is one line of a spool file: a message as prepared for its
// transcript, and the transcript it goes to.
type spoolRecord struct {
	Spool   int                `json:"spool"`
	Agent   string             `json:"agent"`
	Session string             `json:"session"`
	Message transcript.Message `json:"message"`
}

func (r spoolRecord) ref() transcript.Ref { return transcript.Ref{Agent: r.Agent, Session: r.Session} }

// Spool stores messages of t that could not wait for the vault lock, to be
// folded into t's transcript by the next transaction (see the top of this
// file). They are prepared like AppendText's, redaction included, before
// anything is written; the markers in the text are the whole record of a
// redaction, as in a transaction without a commit. It takes no vault lock.
func (v *Vault) Spool(t transcript.Ref, msgs []transcript.Message) error {
	if err := t.Check(); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return nil
	}
	if _, err := v.prepareText(v.Now(), msgs); err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, m := range msgs {
		line, err := json.Marshal(spoolRecord{Spool: spoolVersion, Agent: t.Agent, Session: t.Session, Message: m})
		if err != nil {
			return fmt.Errorf("spool: encode message %s: %w", m.ID, err)
		}
		buf.WriteByte('\n')
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := v.spoolFolder(t.Agent); err != nil {
		return err
	}
	unlock, err := v.spoolLock(false)
	if err != nil {
		return err
	}
	defer unlock()
	return v.Files().Append(v.spoolPath(t.Agent, transcript.SessionFileName(t.Session), 0), buf.Bytes())
}

// spoolPath is a spool file of an agent: the live file (claim 0), or a
// fold's claim n.
func (v *Vault) spoolPath(agent, base string, claim int) string {
	name := base + ".jsonl"
	if claim > 0 {
		name = base + "." + strconv.Itoa(claim) + ".fold"
	}
	return filepath.Join(v.Root, SpoolDir, agent, name)
}

// spoolFolder makes the spool folder of agent, and the spool's .gitignore,
// through no link (a vault cloned from someone else's remote could carry
// one leading out of the vault).
func (v *Vault) spoolFolder(agent string) error {
	fsys := v.Files()
	if err := fsys.MkdirAll(filepath.Join(v.Root, SpoolDir, agent)); err != nil {
		return err
	}
	ignore := filepath.Join(v.Root, SpoolDir, ".gitignore")
	if _, err := fsys.Stat(ignore); errors.Is(err, fs.ErrNotExist) {
		return fsys.WriteAtomic(ignore, []byte(spoolIgnore))
	} else if err != nil {
		return err
	}
	return nil
}

// spoolLock takes the spool lock, shared (an appender) or exclusive (a
// fold), waiting at most spoolLockWait.
func (v *Vault) spoolLock(exclusive bool) (unlock func(), err error) {
	// flock opens the file itself, following links: the folder and the
	// file are checked first.
	fsys := v.Files()
	if err := fsys.MkdirAll(filepath.Join(v.Root, ".locks")); err != nil {
		return nil, fault.IO("create .locks", err)
	}
	if err := fsys.Check(filepath.Join(v.Root, spoolLockFile)); err != nil {
		return nil, err
	}
	fl := flock.New(filepath.Join(v.Root, spoolLockFile), flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(fileio.FilePerm))
	try := fl.TryRLock
	if exclusive {
		try = fl.TryLock
	}
	deadline := time.Now().Add(spoolLockWait)
	for delay := time.Millisecond; ; {
		ok, err := try()
		if err != nil {
			return nil, fault.IO("lock "+spoolLockFile, err)
		}
		if ok {
			return func() { _ = fl.Unlock() }, nil
		}
		if time.Now().After(deadline) {
			return nil, fault.New(ErrBusy, "spool busy: %s held past %s", spoolLockFile, spoolLockWait)
		}
		time.Sleep(delay)
		if delay < 16*time.Millisecond {
			delay *= 2
		}
	}
}

// spoolFile is one file of a session's spool, in the order it is folded.
type spoolFile struct {
	path  string
	claim int  // 0: the live file
	old   bool // a claim that was there before this fold: maybe folded already
}

// spoolSessions lists the spool of every session of agent's folder, by
// encoded session name, each session's files in order: its claims oldest
// first, then its live file. Names that are not the spool's are ignored.
func spoolSessions(fsys fileio.Root, dir string) (map[string][]spoolFile, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]spoolFile{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		name := e.Name()
		if base, ok := strings.CutSuffix(name, ".jsonl"); ok && !strings.Contains(base, ".") && base != "" {
			out[base] = append(out[base], spoolFile{path: filepath.Join(dir, name)})
			continue
		}
		rest, ok := strings.CutSuffix(name, ".fold")
		if !ok {
			continue
		}
		base, n, ok := strings.Cut(rest, ".")
		claim, err := strconv.Atoi(n)
		if !ok || base == "" || err != nil || claim < 1 {
			continue
		}
		out[base] = append(out[base], spoolFile{path: filepath.Join(dir, name), claim: claim, old: true})
	}
	for _, files := range out {
		sort.Slice(files, func(i, j int) bool {
			a, b := files[i].claim, files[j].claim
			if a == 0 || b == 0 {
				return b == 0 && a != 0 // the live file last
			}
			return a < b
		})
	}
	return out, nil
}

// readSpool reads the records of a spool file. A line that is not a whole
// record (torn by a kill, or anything else) is returned in torn; a last
// line without its newline is torn too.
func readSpool(fsys fileio.Root, path string) (recs []spoolRecord, torn [][]byte, err error) {
	data, err := fsys.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	lines := bytes.Split(data, []byte("\n"))
	last := len(lines) - 1 // after the final newline: empty unless torn
	for i, line := range lines {
		if len(line) == 0 {
			continue
		}
		var r spoolRecord
		if i == last || json.Unmarshal(line, &r) != nil || r.Spool != spoolVersion || r.ref().Check() != nil ||
			r.Message.ID == "" || !r.Message.Role.Valid() {
			torn = append(torn, line)
			continue
		}
		recs = append(recs, r)
	}
	return recs, torn, nil
}

// spoolFold is what a transaction took from the spool.
type spoolFold struct {
	v        *Vault
	folded   []string // claims the transaction holds every record of, removed once it succeeded
	warnings []string // torn records, files that could not be read: reported, never fatal
}

func (f *spoolFold) warn(format string, args ...any) {
	f.warnings = append(f.warnings, fmt.Sprintf(format, args...))
}

// agentSpool is the spool of one agent: its sessions' files by encoded
// session name (spoolSessions).
type agentSpool struct {
	agent    string
	sessions map[string][]spoolFile
}

// foldSpool claims the live spool files and queues every claimed record
// for its transcript, in the order each session's records came in (see the
// top of this file). Nothing here fails the transaction: a spool that cannot
// be read or claimed is reported and waits for the next one.
func (tx *Tx) foldSpool() *spoolFold {
	f := &spoolFold{v: tx.v}
	top := filepath.Join(tx.v.Root, SpoolDir)
	fsys := tx.v.Files()
	agents, err := fsys.ReadDir(top)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			f.warn("spool: not read: %v", err)
		}
		return f
	}
	var all []agentSpool
	live := false
	for _, a := range agents {
		if !a.IsDir() || fileio.CheckName("agent", a.Name()) != nil {
			continue // .gitignore, and anything that is no agent's folder, symlinks included
		}
		sessions, err := spoolSessions(fsys, filepath.Join(top, a.Name()))
		if err != nil {
			f.warn("spool: %v", err)
			continue
		}
		for _, files := range sessions {
			live = live || files[len(files)-1].claim == 0
		}
		if len(sessions) > 0 {
			all = append(all, agentSpool{a.Name(), sessions})
		}
	}
	if live {
		f.claim(all)
	}
	for _, a := range all { // ReadDir's order: by agent, then by session
		bases := make([]string, 0, len(a.sessions))
		for b := range a.sessions {
			bases = append(bases, b)
		}
		sort.Strings(bases)
		for _, b := range bases {
			tx.foldSession(f, a.sessions[b])
		}
	}
	return f
}

// claim renames every live spool file to its session's next claim, under
// the spool lock held exclusively, so that no appender writes to a file
// once it is claimed, and syncs the folders: a rename lost in a crash of
// the machine would bring back as new records that may be folded already.
// Without the lock in time the live files are left out of this fold.
func (f *spoolFold) claim(all []agentSpool) {
	unlock, err := f.v.spoolLock(true)
	if err != nil {
		f.warn("spool: not folded this time: %v", err)
	}
	if err == nil {
		defer unlock()
	}
	for _, a := range all {
		renamed := false
		for base, files := range a.sessions {
			last := len(files) - 1
			if files[last].claim != 0 {
				continue
			}
			if err == nil {
				next := 1
				if last > 0 {
					next = files[last-1].claim + 1
				}
				to := f.v.spoolPath(a.agent, base, next)
				rerr := f.v.Files().Check(to) // a rename follows no link; the folder was listed through the Root
				if rerr == nil {
					rerr = os.Rename(files[last].path, to)
				}
				if rerr == nil {
					files[last] = spoolFile{path: to, claim: next}
					renamed = true
					continue
				}
				f.warn("spool: claim %s: %v", files[last].path, rerr)
			}
			// An unclaimed live file is not folded: an appender may still
			// write to it.
			if last == 0 {
				delete(a.sessions, base)
			} else {
				a.sessions[base] = files[:last]
			}
		}
		if renamed {
			if err := fileio.SyncDir(filepath.Join(f.v.Root, SpoolDir, a.agent)); err != nil {
				f.warn("spool: %v", err)
			}
		}
	}
}

// foldSession queues the records of one session's spool files, in order.
// When a claim is older than this fold, its records may be in the
// transcript already (a writer killed after its write, before it removed
// the claim): records whose message id is stored are skipped. A file that
// cannot be read stops the session's fold there, so that nothing after it
// goes in before it.
func (tx *Tx) foldSession(f *spoolFold, files []spoolFile) {
	dedupe := false
	for _, sf := range files {
		dedupe = dedupe || sf.old
	}
	var order []transcript.Ref
	msgs := map[transcript.Ref][]transcript.Message{}
	ids := map[transcript.Ref]map[string]bool{}
	var read []string
	for _, sf := range files {
		recs, torn, err := readSpool(tx.v.Files(), sf.path)
		if err != nil {
			f.warn("spool: %v", err)
			break
		}
		for _, frag := range torn {
			f.torn(sf.path, frag)
		}
		ok := true
		for _, r := range recs {
			t := r.ref()
			seen, known := ids[t]
			if !known {
				seen = map[string]bool{}
				if dedupe {
					if seen, err = transcript.MessageIDs(tx.v.Files(), t); err != nil {
						f.warn("spool: %s: %v", sf.path, err)
						ok = false
						break
					}
				}
				ids[t] = seen
				order = append(order, t)
			}
			if dedupe && seen[r.Message.ID] {
				continue
			}
			seen[r.Message.ID] = true
			msgs[t] = append(msgs[t], r.Message)
		}
		if !ok {
			break
		}
		read = append(read, sf.path)
	}
	for _, t := range order {
		if _, _, err := tx.AppendMessages(t, msgs[t]); err != nil {
			// What was queued before is skipped when the claims are folded
			// again: they are older then.
			f.warn("spool: fold into %s: %v", t.Path(), err)
			return
		}
	}
	f.folded = append(f.folded, read...)
}

// torn reports a record that is not whole and keeps its bytes in .logs/
// for a person to look at.
func (f *spoolFold) torn(path string, frag []byte) {
	rel, _ := filepath.Rel(f.v.Root, path)
	rel = filepath.ToSlash(rel)
	kept := ".logs/" + fmt.Sprintf("spool-torn-%s.txt", time.Now().UTC().Format("20060102T150405.000000000"))
	if f.v.Files().WriteAtomic(filepath.Join(f.v.Root, filepath.FromSlash(kept)), append([]byte(rel+"\n"), frag...)) != nil {
		kept = "nowhere (.logs/ cannot be written)"
	}
	f.warn("spool: %s: a torn record of %d bytes skipped (a writer killed mid-write?); its bytes are kept in %s",
		rel, len(frag), kept)
}

// done removes the claims whose records the transaction holds, once it has
// succeeded, and reports what the fold met to the vault's Warn, which the
// front ends point at the hook log (a hook's problems go there; a command
// also prints them as warnings).
func (f *spoolFold) done() {
	if f == nil {
		return
	}
	if f.v.StopAt != nil && len(f.folded) > 0 {
		f.v.StopAt("folded")
	}
	for _, p := range f.folded {
		if err := f.v.Files().Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.warn("spool: remove %s: %v (its records are skipped when folded again)", p, err)
		}
	}
	if f.v.Warn != nil {
		for _, w := range f.warnings {
			f.v.Warn(w)
		}
	}
}

// Spooled returns the messages of t waiting in the spool, once each. It
// takes no lock, so a fold may claim the live file meanwhile, or fold and
// remove a claim: the live file is read before the claims are listed (a
// record renamed in between is then read twice, and kept once), and a
// caller that also reads the transcript reads it after this, where a
// record folded meanwhile is by then.
func (v *Vault) Spooled(t transcript.Ref) []transcript.Message {
	base := transcript.SessionFileName(t.Session)
	files := []spoolFile{{path: v.spoolPath(t.Agent, base, 0)}}
	if sessions, err := spoolSessions(v.Files(), filepath.Join(v.Root, SpoolDir, t.Agent)); err == nil {
		for _, sf := range sessions[base] {
			if sf.claim > 0 {
				files = append(files, sf)
			}
		}
	}
	var out []transcript.Message
	seen := map[string]bool{}
	for _, sf := range files {
		recs, _, _ := readSpool(v.Files(), sf.path)
		for _, r := range recs {
			if r.ref() == t && !seen[r.Message.ID] {
				seen[r.Message.ID] = true
				out = append(out, r.Message)
			}
		}
	}
	return out
}
