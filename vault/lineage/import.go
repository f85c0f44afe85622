package lineage

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/units"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/scope"
	"github.com/memvault/memvault/vault/transcript"
)

// importWindow is how much of a source file one parse reads and one
// transaction appends. It bounds three things: memory (a window's messages
// and their stored lines, not the file's), how much a deadline is overrun
// (redaction, the costliest step, takes prose at about 1.7 MB/s: 256 KiB is
// about 150 ms of it), and how much a kill can cost (one window is parsed
// again). A line longer than the window is read whole.
const importWindow = 256 << 10

// Under a deadline, windows are sized to the time left at the rate the
// call has read so far, between minWindow and importWindow, so that the
// last one ends about when the deadline comes, on a fast machine or a slow
// one (the race detector makes redaction several times slower). The first
// is the smallest, so that a hook stores something early even on a slow
// or loaded machine: a harness may kill it at any time.
const minWindow = 16 << 10

// commitBytes is how much of a source a committing import (`memvault
// transcript import`) reads between two commits: a commit holds the parts
// it carries in memory, so committing a 60 MB file at once would cost
// three times that.
const commitBytes = 8 << 20

// importRecord is what a transcript.imported event says: the messages
// added and what the parser did with the lines it read.
type importRecord struct {
	From     int              `json:"from"`
	To       int              `json:"to"`
	Messages int              `json:"messages"`
	Stats    transcript.Stats `json:"stats"`
}

// add extends the record by messages from..to.
func (r *importRecord) add(from, to, messages int) {
	if messages == 0 {
		return
	}
	if r.From == 0 || from < r.From {
		r.From = from
	}
	r.To = max(r.To, to)
	r.Messages += messages
}

// importEvent is the transcript.imported event of rec.
func importEvent(format transcript.Format, source string, rec importRecord) *vault.Event {
	data, _ := json.Marshal(map[string]any{
		"via": "import", "format": format, "source": source, "from": rec.From, "to": rec.To,
		"messages": rec.Messages, "skipped": rec.Stats.Skipped, "unknown": rec.Stats.Unknown,
		"invalid": rec.Stats.Invalid, "redacted": rec.Stats.Redacted,
	})
	return &vault.Event{Kind: "transcript.imported", Text: fmt.Sprintf("imported %d messages from %s", rec.Messages, filepath.Base(source)),
		Data: data, Source: "import"}
}

// ImportReport says what an import did.
type ImportReport struct {
	Agent      string           `json:"agent"`
	Session    string           `json:"session"`
	Source     string           `json:"source"`
	Format     string           `json:"format"`
	Added      int              `json:"added"`
	Duplicates int              `json:"duplicates,omitempty"`
	From       int              `json:"from,omitempty"`
	To         int              `json:"to,omitempty"`
	Stats      transcript.Stats `json:"stats"`
	Commits    []string         `json:"commits,omitempty"`
	// More: the deadline came before the end of the source; the next
	// import goes on from where this one stopped.
	More bool `json:"more,omitempty"`
}

// Import reads the new part of a harness transcript into the vault
// transcript of t. It remembers where it stopped (per agent, session, format
// and source path) and, when it reads a file from the start into a
// transcript that already has messages (a fresh clone, a deleted .state/, a
// rewritten or truncated file), skips messages whose id is already stored,
// so importing the same file again, or a longer version of it, adds only
// what is new, even without the remembered offset.
//
// The file is read importWindow at a time, each window appended durably in
// a transaction of its own without a commit, so memory stays bounded and a
// process killed at any point loses at most the window it was reading; the
// messages are then committed, commitBytes of the file at a time, with
// their transcript.imported event. With opts.NoCommit (a hook's turn,
// DESIGN §3) nothing is committed: the event waits for the next import of
// the source that commits or for lineage.RecordImport, and thread must be empty.
func Import(v *vault.Vault, opts vault.TxOptions, t transcript.Ref, format transcript.Format, source, thread string) (*ImportReport, error) {
	return importSource(v, opts, t, format, source, thread, time.Time{}, 0)
}

// ImportUntil is Import without a commit that starts no window after
// deadline (it reads one window at least, so every call makes progress).
// Report.More says that the source has more: the next call goes on where
// this one stopped. The hooks import through it within the time their
// harness gives them (docs/HOOKS.md, "Time").
func ImportUntil(v *vault.Vault, opts vault.TxOptions, t transcript.Ref, format transcript.Format, source string, deadline time.Time) (*ImportReport, error) {
	opts.NoCommit = true
	return importSource(v, opts, t, format, source, "", deadline, 0)
}

// errStaleImport: another process imported from the source since this one
// read where to start; the batch is dropped and read again from there.
var errStaleImport = errors.New("import: moved on by another process")

// importBatchIn is a window parsed outside the lock, to be appended.
type importBatchIn struct {
	from, next transcript.Cursor
	msgs       []transcript.Message
	stats      transcript.Stats
	eof        bool // the window reached the end of the file as it was opened
}

// importSource is Import and ImportUntil; window, when not 0, replaces the
// first window's size (tests read small files in many windows with it).
func importSource(v *vault.Vault, opts vault.TxOptions, t transcript.Ref, format transcript.Format, source, thread string,
	deadline time.Time, window int64) (*ImportReport, error) {
	if err := checkImport(t, opts, thread); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(source)
	if err != nil {
		return nil, fault.IO("import "+source, err)
	}
	f, info, err := fileio.OpenInput(abs, "import "+source, fileio.InputOptions{Max: MaxTranscriptBytes, NoFollow: true})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &importRun{v: v, source: source, thread: thread, deadline: deadline, f: f, size: info.Size(),
		id:     &importID{t: t, format: format, source: abs, path: importStatePath(v, t, format, abs)},
		rep:    &ImportReport{Agent: t.Agent, Session: t.Session, Source: source, Format: string(format)},
		popts:  transcript.Options{Rules: v.Rules, NoRedact: v.Rules == nil, Session: &transcript.Session{}},
		window: firstWindow(window, deadline)}
	r.opts, r.batchOpts = importTxOptions(opts, t)
	for {
		more, err := r.step()
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
	}
	if !r.opts.NoCommit {
		if err := commitChunk(v, r.opts, r.id, thread, &r.chunk, r.rep); err != nil {
			return nil, err
		}
	}
	return r.rep, nil
}

// checkImport refuses a bad transcript, and a thread that is malformed or
// given to an import without a commit (a thread is bound by a commit).
func checkImport(t transcript.Ref, opts vault.TxOptions, thread string) error {
	if err := t.Check(); err != nil {
		return err
	}
	if thread != "" {
		if opts.NoCommit {
			return fault.New(vault.ErrInvalid, "import: a thread is bound by a commit")
		}
		if _, err := vault.ParseThread(thread); err != nil {
			return err
		}
	}
	return nil
}

// importTxOptions are the options of an import's commits, which act for
// t's agent and session, and of its windows' transactions, which never
// commit.
func importTxOptions(opts vault.TxOptions, t transcript.Ref) (commits, batches vault.TxOptions) {
	if opts.Agent == "" {
		opts.Agent = t.Agent
	}
	if opts.Command == "" {
		opts.Command = "transcript import"
	}
	opts.Session = t.Session
	batches = opts
	batches.NoCommit = true
	return opts, batches
}

// firstWindow is the size of an import's first window: the one asked for,
// else a whole importWindow, or under a deadline the smallest, so that a
// hook stores something early.
func firstWindow(window int64, deadline time.Time) int64 {
	switch {
	case window > 0:
		return window
	case deadline.IsZero():
		return importWindow
	default:
		return minWindow
	}
}

// importRun is one importSource call: the source and its import's state
// file, the options of its windows and of its commits, and how far it got.
type importRun struct {
	v         *vault.Vault
	opts      vault.TxOptions // the commits' (importTxOptions)
	batchOpts vault.TxOptions // the windows': no commit; under a deadline, a bounded lock wait
	id        *importID
	source    string // as the caller named it, for messages
	thread    string
	deadline  time.Time
	f         *os.File
	size      int64 // the source's size when it was opened: the import stops there
	popts     transcript.Options
	window    int64         // size of the next window
	rep       *ImportReport // what the import did so far
	mine      *importBatch  // the batch this process appended last
	sniffed   bool          // the source's format was checked
	windows   int           // windows appended
	chunk     importChunk   // what a committing import appended since its last commit
}

// step reads the import's state and either restarts from the source's
// start, when there is no state or the source was replaced, cut or
// rewritten, or reads the next window and appends it. It reports false
// when the import is over: the source read to its end (or to a torn last
// line, which the harness is still writing), or the deadline come.
func (r *importRun) step() (bool, error) {
	st := loadImport(r.v, r.id.t, r.id.path, r.mine)
	if st.fresh {
		return true, restartImport(r.v, r.batchOpts, r.id, &st)
	}
	if st.Offset == r.size {
		return false, nil
	}
	if r.windows > 0 && !r.deadline.IsZero() && !time.Now().Before(r.deadline) {
		r.rep.More = true
		return false, nil
	}
	if st.Offset == 0 && !r.sniffed {
		r.sniffed = true
		if err := sniff(r.f, r.size, r.source, r.id.format); err != nil {
			return false, err
		}
	}
	started := time.Now()
	b, err := readWindow(r.f, r.size, r.id.format, st.Cursor, r.window, r.popts)
	if errors.Is(err, transcript.ErrMidLine) || errors.Is(err, transcript.ErrShrunk) || errors.Is(err, transcript.ErrRewritten) {
		// The file was replaced, cut or rewritten: read it again from
		// the start, skipping what is stored.
		return true, restartImport(r.v, r.batchOpts, r.id, &st)
	}
	if err != nil {
		return false, fmt.Errorf("import %s: %w", r.source, err)
	}
	if b == nil {
		return false, nil // only a torn last line is left: the harness is still writing it
	}
	return r.appendWindow(b, started)
}

// appendWindow appends window b (read from started on) in a transaction of
// its own without a commit; a committing import then commits once it has
// read commitBytes since its last commit, and under a deadline the next
// window is sized to the time left. A batch another process made stale is
// dropped and read again; a window after the first that finds the vault
// busy ends the import with More, keeping what was appended.
func (r *importRun) appendWindow(b *importBatchIn, started time.Time) (bool, error) {
	if r.windows > 0 && !r.deadline.IsZero() {
		r.batchOpts.LockTimeout = lockWaitUntil(r.deadline, r.opts.LockTimeout)
	}
	var done *importBatch
	_, err := r.v.Update(r.batchOpts, func(tx *vault.Tx) error {
		var err error
		done, err = appendBatch(tx, r.id, b, r.size, r.rep)
		return err
	})
	if errors.Is(err, errStaleImport) {
		r.mine = nil
		r.popts.Session = &transcript.Session{}
		return true, nil
	}
	if err != nil {
		if r.windows > 0 && vault.IsBusy(err) {
			r.rep.More = true // what was appended stays; the next import goes on
			return false, nil
		}
		return false, err
	}
	mergeStats(&r.rep.Stats, b.stats)
	r.mine = done
	r.windows++
	r.v.Progress.Step(fmt.Sprintf("import: %s messages from %s", units.Count(int64(r.rep.Added)), filepath.Base(r.source)), "bytes", b.next.Offset, r.size)
	if !r.opts.NoCommit {
		r.chunk.add(done, b.next.Offset-b.from.Offset, r.rep.Added)
		if r.chunk.read >= commitBytes {
			if err := commitChunk(r.v, r.opts, r.id, r.thread, &r.chunk, r.rep); err != nil {
				return false, err
			}
		}
	}
	if !r.deadline.IsZero() {
		r.window = nextWindow(b.next.Offset-b.from.Offset, time.Since(started), time.Until(r.deadline))
	}
	return true, nil
}

// importChunk is what a committing import appended since its last commit:
// the transcript parts it wrote to, the source bytes it read, the messages
// it added.
type importChunk struct {
	lo, hi   int
	touched  bool
	read     int64
	from, to int // rep.Added before and after
}

func (c *importChunk) add(b *importBatch, read int64, added int) {
	c.read += read
	c.to = added
	if b == nil {
		return
	}
	if !c.touched || b.Before.Part < c.lo {
		c.lo = b.Before.Part
	}
	c.hi = max(c.hi, b.End.Part)
	c.touched = true
}

// commitChunk commits the parts a committing import wrote to since its
// last commit, with the transcript.imported event of what it added (and of
// what hooks imported before without a commit), binding the session to
// thread the first time; nothing when it added no message.
func commitChunk(v *vault.Vault, opts vault.TxOptions, id *importID, thread string, c *importChunk, rep *ImportReport) error {
	added := c.to - c.from
	if added == 0 || !c.touched {
		*c = importChunk{from: c.to, to: c.to}
		return nil
	}
	res, err := v.Update(opts, func(tx *vault.Tx) error {
		if thread != "" && len(rep.Commits) == 0 {
			if err := scope.BindSession(tx, id.t, thread); err != nil {
				return err
			}
		}
		if err := RecordImport(tx, id.t, id.format, rep.Source); err != nil {
			return err
		}
		tx.Subject(fmt.Sprintf("transcript: import of %d messages (%s)", added, id.format))
		for n := c.lo; n <= c.hi; n++ {
			tx.CommitFile(vault.TranscriptRel(id.t, n))
		}
		tx.Carry(id.t)
		return nil
	})
	if err != nil {
		return err
	}
	if res.Commit != "" {
		rep.Commits = append(rep.Commits, res.Commit)
	}
	*c = importChunk{from: c.to, to: c.to}
	return nil
}

// lockWaitUntil is how long a window after the first may wait for the vault
// lock: the time left before the deadline (50 ms at least), and no more
// than the caller's wait.
func lockWaitUntil(deadline time.Time, callers time.Duration) time.Duration {
	wait := max(time.Until(deadline), 50*time.Millisecond)
	if callers > 0 {
		wait = min(wait, callers)
	}
	return wait
}

// nextWindow sizes the next window to what the rate of the last one (read
// bytes in spent) gets through in the time left, between minWindow and
// importWindow.
func nextWindow(read int64, spent, left time.Duration) int64 {
	if spent <= 0 || left <= 0 {
		return minWindow
	}
	return min(max(int64(float64(read)*float64(left)/float64(spent)), minWindow), importWindow)
}

func (rep *ImportReport) addSpan(from, to, n int) {
	if rep.From == 0 || from < rep.From {
		rep.From = from
	}
	rep.To = max(rep.To, to)
	rep.Added += n
}

// RecordImport records the transcript.imported event of what imports of
// source into t without a commit (a hook's turns) added since the last
// such event, so that the transaction committing the session's transcript
// also says how it came in. It records nothing when there is nothing new.
// The record is cleared once the commit has landed; a crash in between
// records the span again with the next commit, the messages stay stored
// once.
func RecordImport(tx *vault.Tx, t transcript.Ref, format transcript.Format, source string) error {
	abs, err := filepath.Abs(source)
	if err != nil {
		return fault.IO("import "+source, err)
	}
	path := importStatePath(tx.Vault(), t, format, abs)
	st := loadImport(tx.Vault(), t, path, nil)
	if st.fresh || st.Unrecorded == nil || st.Unrecorded.Messages == 0 {
		return nil
	}
	tx.Append(importEvent(format, source, *st.Unrecorded))
	tx.OnCommitted(func() {
		st := loadImport(tx.Vault(), t, path, nil)
		if st.fresh {
			return
		}
		st.Unrecorded = nil
		_ = saveImport(tx.Vault(), path, st) // not cleared: the next commit records the span again
	})
	return nil
}

func mergeStats(dst *transcript.Stats, s transcript.Stats) {
	dst.Lines += s.Lines
	dst.Messages += s.Messages
	dst.Invalid += s.Invalid
	for _, pair := range []struct {
		d *map[string]int
		s map[string]int
	}{
		{&dst.Skipped, s.Skipped}, {&dst.Unknown, s.Unknown}, {&dst.Redacted, s.Redacted},
	} {
		for k, n := range pair.s {
			if *pair.d == nil {
				*pair.d = map[string]int{}
			}
			(*pair.d)[k] += n
		}
	}
}
