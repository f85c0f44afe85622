package vault

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/node"
	"github.com/memvault/memvault/vault/transcript"
	"github.com/memvault/memvault/vault/waiting"
)

// TxOptions describe who is writing and how.
type TxOptions struct {
	Command string // for the lease: what the holder is doing
	Agent   string // defaults to the vault's configured agent
	Session string
	Harness string
	// Force writes even though the ledger fails verification. The damage is
	// left for a person to repair; the new events chain onto the last line.
	Force bool
	// NoCommit writes durably but makes no commit: the prompt flow of a
	// session (prompts, the turns that record nothing) writes transcript
	// lines at once, and the session's next commit carries them
	// (CommitTranscript, DESIGN §3). Only appends to transcripts may use
	// it; events always commit.
	NoCommit bool
	// Defer writes and seals as a committing transaction does (the policy
	// checked, the chain sealed, the same crash order) but makes no
	// commit: for bookkeeping. What it wrote waits, listed in
	// .locks/deferred.json (vault/waiting), for the next transaction that
	// commits, which carries it under its own subject, or for Flush.
	Defer bool
	// LockTimeout overrides how long to wait for the vault lock (hooks wait
	// less than people).
	LockTimeout time.Duration
	// Source is the front end that writes ("mcp"), recorded as the source
	// of the events a verb makes without naming one; "" is the command
	// line's, "cli".
	Source string
}

// Tx is one transaction: everything it records is written, committed and
// made visible together, or not at all.
type Tx struct {
	v       *Vault
	opts    TxOptions
	now     time.Time
	events  []*Event
	appends []*pendingFile // whole lines for append-only files, one entry per file
	files   []pendingFile
	subject string // the caller's subject; content events name the commit first
	state   *State
	// transcripts tracks the tail of each transcript appended to in this
	// transaction, so consecutive appends number and split parts correctly.
	transcripts map[transcript.Ref]*transcript.End
	nodes       []string    // node ids created, for the Memvault-Node trailers
	commitPaths []RelPath   // files written earlier without a commit, committed now
	nodeIndex   *node.Index // loaded on first use by distillation
	// slots keep the state a feature built on the transaction needs for
	// its length (the protocol's fold, …), each under a key of the
	// feature's own type (Slot).
	slots map[any]any

	carried []transcript.Ref // transcripts the commit carries, for its subject
	// committed runs after the commit landed, still under the lock: state
	// kept beside the vault that must change only once the commit holds
	// what it describes (an import's unrecorded stats).
	committed []func()
	join      bool // Join: join the open tips even with no events

	waiting *waiting.Record // what deferred transactions left (commitmsg.go)
	carry   *waiting.Record // what this commit carries of it
	flush   bool            // Flush: commit what waits, even with nothing of its own
}

type pendingFile struct {
	rel  RelPath
	data []byte
	// guarded: write only if the file still holds was (or, with !existed,
	// still does not exist); see WriteFileIfUnchanged.
	guarded bool
	was     []byte
	existed bool
}

// ErrChangedUnderfoot means a file written with WriteFileIfUnchanged was
// changed by someone else (a person's editor) after it was read; the
// transaction is rolled back and its caller may read and merge again.
var ErrChangedUnderfoot = errors.New("changed while being merged")

// Result is what a committed transaction produced.
type Result struct {
	Commit   string   // the new commit; "" when the transaction changed nothing
	Events   []*Event // the events appended, sealed, in order
	Warnings []string // problems after the commit landed, for stderr
}

// Append queues ev for the ledger. Id, timestamp, agent, session and harness
// are filled in when empty; prev and hash are set at commit time, when the
// chain's tip is known.
func (tx *Tx) Append(ev *Event) *Event {
	if ev.ID == "" {
		ev.ID = NewID("e_", tx.now)
	}
	if ev.TS == "" {
		ev.TS = FormatTS(tx.now)
	}
	if ev.Agent == "" {
		ev.Agent = tx.opts.Agent
	}
	if ev.Session == "" {
		ev.Session = tx.opts.Session
	}
	if ev.Harness == "" {
		ev.Harness = tx.opts.Harness
	}
	// Secrets never reach the ledger: the text and every string in data
	// are redacted like a transcript, and the counts (never the secrets)
	// kept in data.
	// Text derived from a harness's transcript (a summary) may hold what
	// a person's text may not: git refuses a NUL in a commit message.
	ev.Text = CleanText(ev.Text)
	text, counts := tx.v.Redact(ev.Text)
	data, dataCounts := tx.v.redactData(ev.Data)
	for k, n := range dataCounts {
		if counts == nil {
			counts = map[string]int{}
		}
		counts[k] += n
	}
	if len(counts) > 0 {
		ev.Text, ev.Data = text, data
		ev.Data = WithData(ev.Data, "redacted", counts)
	}
	tx.events = append(tx.events, ev)
	if tx.state != nil {
		tx.state.Add(&Row{Event: ev})
	}
	return ev
}

// WriteFile queues a whole-file write, applied atomically at commit time.
func (tx *Tx) WriteFile(rel RelPath, data []byte) {
	tx.files = append(tx.files, pendingFile{rel: rel, data: data})
}

// WriteFileIfUnchanged queues a whole-file write that is made only if the
// file still holds was when the transaction applies (existed false: does
// not exist yet). A person saves files without taking the vault lock, so a
// writer that merged with what they had saved must not replace a newer
// save: the transaction fails with errChangedUnderfoot instead, and nothing
// is written.
func (tx *Tx) WriteFileIfUnchanged(rel RelPath, data, was []byte, existed bool) {
	tx.files = append(tx.files, pendingFile{rel: rel, data: data, guarded: true, was: was, existed: existed})
}

// AppendFile queues whole lines for an append-only file (a transcript
// part). Several appends to one file in a transaction become one write.
func (tx *Tx) AppendFile(rel RelPath, lines []byte) {
	for _, a := range tx.appends {
		if a.rel == rel {
			a.data = append(a.data, lines...)
			return
		}
	}
	tx.appends = append(tx.appends, &pendingFile{rel: rel, data: append([]byte(nil), lines...)})
}

// pendingAppend reports the bytes queued for rel so far, so that a writer
// can size transcript parts before anything reaches the disk.
func (tx *Tx) pendingAppend(rel RelPath) int {
	for _, a := range tx.appends {
		if a.rel == rel {
			return len(a.data)
		}
	}
	return 0
}

// CommitTranscript includes the parts of t, as they are on disk, in this
// transaction's commit: lines the prompt flow wrote without a commit are
// committed at the session's next lineage event.
func (tx *Tx) CommitTranscript(t transcript.Ref) error {
	parts, err := transcript.Parts(tx.v.Files(), t)
	if err != nil {
		return err
	}
	for _, p := range parts {
		tx.commitPaths = append(tx.commitPaths, TranscriptRel(t, p))
	}
	if len(parts) > 0 {
		tx.Carry(t)
	}
	return nil
}

// CommitFile includes rel, as it is on disk when the transaction commits,
// in this transaction's commit, without writing it: a person's file is
// committed with whatever they saved last.
func (tx *Tx) CommitFile(rel RelPath) {
	tx.commitPaths = append(tx.commitPaths, rel)
}

// Update runs fn inside a transaction: it takes the vault lock, checks that
// the ledger is intact, runs fn, then writes what fn queued, commits exactly
// those paths, and releases the lock. If fn or any write fails, files are
// restored and nothing is committed.
func (v *Vault) Update(opts TxOptions, fn func(*Tx) error) (*Result, error) {
	if opts.Agent == "" {
		opts.Agent = v.Config.Agent
	}
	if err := opts.check(v); err != nil {
		return nil, err
	}
	release, err := v.Lock(Lease{Agent: opts.Agent, Session: opts.Session, Command: opts.Command}, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	if !opts.NoCommit && !opts.Defer {
		defer v.autoPack() // after the release below: lock.go
	}
	defer release()
	v.Repo.Refresh() // a gc may have packed objects since the repository was opened

	start, err := v.startTx(opts)
	if err != nil {
		return nil, err
	}
	tx := &Tx{v: v, opts: opts, now: time.Now()}
	if v.Clock != nil {
		tx.now = v.Clock()
	}
	tx.notePolicyStamps(start) // policytx.go: the policy's view loads against them
	if !opts.NoCommit {
		tx.waiting = waiting.Load(v.Files(), v.Root)
	}
	// What hooks spooled while the lock was held goes first, so that a
	// session's messages keep their order (spool.go).
	spool := tx.foldSpool()
	if err := fn(tx); err != nil {
		return nil, err
	}
	return tx.finish(start, spool)
}

// txStart is what a transaction found under the lock before its function
// ran: the ledger's verified stamps and problems, the refusal of structured
// writes they call for, and the ledger's tail.
type txStart struct {
	stamps   []verifiedStamp
	problems []Problem
	refuse   error
	tail     tailState
}

// startTx checks the ledger under the lock, saves what the check read,
// decides whether structured writes are refused, and settles what a killed
// transaction left.
func (v *Vault) startTx(opts TxOptions) (txStart, error) {
	segs, _, err := ListSegments(v.Root)
	if err != nil {
		return txStart{}, err
	}
	v.registerDriverOnce()
	stamps, problems, reread, err := v.checkChain(segs)
	if err != nil {
		return txStart{}, err
	}
	if reread {
		// What was checked stays checked, whether or not this transaction
		// appends to the ledger (a prompt's does not); a failure too, so
		// that the transactions of a vault in need of repair (capture goes
		// on) do not each read the ledger again.
		c := verifiedCache{stamps: stamps, problems: slices.DeleteFunc(slices.Clone(problems),
			func(p Problem) bool { return p.File == mergeHeadFile })}
		if len(c.problems) > 0 {
			c.tree = v.ledgerTree()
		}
		v.saveStamps(c)
	}
	// A ledger that fails the check refuses structured writes, but not
	// capture: a transaction that only appends to transcripts (or commits
	// them) goes ahead, since transcript lines are not chained. The refusal
	// is decided once fn has queued its writes.
	start := txStart{stamps: stamps, problems: problems}
	if len(problems) > 0 && !opts.Force {
		e := fault.New(ErrCorrupt, "ledger: %s", problems[0])
		if len(problems) > 1 {
			e.Msg += fmt.Sprintf(" (and %d more)", len(problems)-1)
		}
		start.refuse = e.WithHint("run memvault repair (memvault verify names every problem), or pass --force to write anyway")
		if problems[0].Commit != "" {
			start.refuse = e.WithHint("undo the forgery as said (memvault verify names every problem); memvault repair does not take it as its own")
		}
	}
	if v.configErr != nil {
		start.refuse = v.configErr
	}
	start.tail, err = readTail(v.Root, segs)
	if err != nil && !opts.Force {
		if start.refuse == nil {
			return txStart{}, err
		}
		start.tail = tailState{}
	}
	if len(problems) == 0 && len(stamps) > 0 {
		start.tail.tips = stamps[len(stamps)-1].Tips
	}
	// Fail before writing anything if there is no branch to commit to.
	if _, err := v.Repo.Branch(); err != nil {
		return txStart{}, err
	}
	// Head writes of a transaction killed before its seal are undone
	// (headjournal.go).
	v.settleHeadWrites(segs)
	return start, nil
}

// finish checks what the function queued against what the start allows,
// applies it, and keeps the stamps of what it appended as verified.
func (tx *Tx) finish(start txStart, spool *spoolFold) (*Result, error) {
	if err := tx.checkEvents(); err != nil {
		return nil, err
	}
	if start.refuse != nil && !tx.captureOnly() {
		return nil, start.refuse
	}
	if tx.opts.NoCommit && (len(tx.events) > 0 || len(tx.files) > 0) {
		return nil, fmt.Errorf("vault: a transaction without a commit may only append to transcripts")
	}
	// The policy, for every event whatever wrote it, --force included
	// (policytx.go): a refused transaction commits only its violations.
	refused := tx.checkPolicy()
	if refused != nil {
		if !errors.Is(refused, ErrForbidden) {
			return nil, refused
		}
		tx.keepViolations()
	}
	if tx.join && len(start.tail.tips) < 2 {
		tx.join = false // nothing to join
	}
	if len(tx.events) == 0 && len(tx.files) == 0 && len(tx.appends) == 0 && len(tx.commitPaths) == 0 && !tx.join &&
		!(tx.flush && !tx.waiting.Empty()) {
		spool.done()
		return &Result{Warnings: spool.warnings}, nil
	}
	res, newStamps, err := tx.apply(start.tail)
	if err != nil {
		return nil, err
	}
	if refused == nil {
		// A refused transaction's spooled messages stay spooled: the
		// next transaction folds them in again.
		spool.done()
		res.Warnings = append(res.Warnings, spool.warnings...)
	}
	if stamps := start.stamps; len(start.problems) == 0 && len(newStamps) > 0 {
		for _, ns := range newStamps {
			if n := len(stamps); n > 0 && stamps[n-1].Path == ns.Path {
				stamps[n-1] = ns
			} else {
				stamps = append(stamps, ns)
			}
		}
		tx.v.saveStamps(verifiedCache{stamps: stamps})
	}
	if refused != nil {
		return nil, refused
	}
	return res, nil
}

// apply writes the queued events and files and commits them, in the
// order that keeps a crash at any point safe:
//
//	stage   every file the events will name: transcript lines (journalled
//	        for the index first), then whole files, atomically
//	seal    the events chained onto the ledger's tip and appended: the
//	        transaction's point of no return
//	commit  exactly the paths written (and those asked for), through git's
//	        object layer, then git's index brought level
//
// A failure before the commit undoes what was written, newest first.
func (tx *Tx) apply(tail tailState) (*Result, []verifiedStamp, error) {
	var rollback undo
	fail := func(err error) (*Result, []verifiedStamp, error) {
		rollback.run()
		return nil, nil, err
	}
	if err := tx.noteWaiting(nil); err != nil {
		return fail(err)
	}
	changes, err := tx.stage(&rollback)
	if err != nil {
		return fail(err)
	}
	if tx.v.StopAt != nil {
		tx.v.StopAt("staged")
	}
	cs, stamps, err := tx.seal(&tail, &rollback)
	if err != nil {
		return fail(err)
	}
	if tx.v.StopAt != nil {
		tx.v.StopAt("sealed")
	}
	changes = append(changes, cs...)
	if tx.opts.NoCommit {
		return &Result{Events: tx.events}, stamps, nil
	}
	if tx.opts.Defer {
		if err := tx.noteWaiting(changes); err != nil {
			return fail(err)
		}
		for _, fn := range tx.committed {
			fn() // what was written holds: it is sealed, and waits only for git
		}
		return &Result{Events: tx.events}, stamps, nil
	}
	res, err := tx.commit(changes)
	if err != nil {
		return fail(err)
	}
	if res.Commit != "" {
		for _, fn := range tx.committed {
			fn()
		}
	}
	return res, stamps, nil
}

// seal chains the events onto the ledger's tip and appends them to the
// segment they belong in. The ledger goes last: its line is the
// transaction's point of no return, so everything an event names (a node
// file, a transcript span, a head) is on disk before the event is. A crash
// before it leaves files no event refers to yet; a crash after it, an
// event whose files exist. When a merge left several open tips, a join
// event goes first, at the end of the last segment (joinEvent). It returns
// the segments as changed and their new stamps; none when there are no
// events.
func (tx *Tx) seal(tail *tailState, rollback *undo) ([]*gitrepo.Change, []verifiedStamp, error) {
	if len(tx.events) == 0 && !tx.join {
		return nil, nil, nil
	}
	var changes []*gitrepo.Change
	var stamps []verifiedStamp
	appendLines := func(seg Segment, lines []byte, tip string) error {
		c, err := tx.appendChange(seg.Rel(), lines, rollback)
		if err != nil {
			return err
		}
		st, err := stampOf(tx.v.Root, seg)
		if err != nil {
			return err
		}
		st.Tip = tip
		changes = append(changes, c)
		stamps = append(stamps, verifiedStamp{SegStamp: st, Tips: []string{tip}})
		return nil
	}
	if len(tail.tips) > 1 {
		if err := tx.repairTorn(tail); err != nil {
			return nil, nil, err
		}
		join, err := tx.v.joinEvent(tail.tips)
		if err != nil {
			return nil, nil, err
		}
		line, err := join.Seal(join.Prev)
		if err != nil {
			return nil, nil, err
		}
		// The join goes to the last segment whatever the day: two clones
		// that join the same tips write the same line in the same file.
		if err := appendLines(tail.seg, line, join.Hash); err != nil {
			return nil, nil, err
		}
		tail.size += int64(len(line))
		tail.tip, tail.tipEvent, tail.tips = join.Hash, join, []string{join.Hash}
	}
	if len(tx.events) == 0 {
		return changes, stamps, nil
	}
	seg, prev, err := tx.prepareSegment(tail, rollback)
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	for _, ev := range tx.events {
		line, err := ev.Seal(prev)
		if err != nil {
			return nil, nil, err
		}
		buf.Write(line)
		prev = ev.Hash
	}
	if err := appendLines(seg, buf.Bytes(), prev); err != nil {
		return nil, nil, err
	}
	if len(changes) == 2 && changes[0].Path == changes[1].Path {
		changes = changes[1:] // the join and the events in one segment: commit it once
	}
	return changes, stamps, nil
}

// commit commits changes and the paths the transaction asked to commit as
// they are on disk, then brings git's index level with the commit. An
// index that cannot follow is a warning: the commit has landed.
func (tx *Tx) commit(changes []*gitrepo.Change) (*Result, error) {
	v := tx.v
	settle := tx.carryWaiting()
	for _, rel := range tx.commitPaths {
		content, err := v.Files().ReadFile(v.Abs(rel))
		if err != nil {
			continue // nothing there: nothing to commit
		}
		info, err := v.Files().Stat(v.Abs(rel))
		if err != nil {
			continue
		}
		dup := false
		for _, c := range changes {
			dup = dup || c.Path == rel.String()
		}
		if !dup {
			changes = append(changes, &gitrepo.Change{Path: rel.String(), Content: content, Stat: info})
		}
	}
	who := gitrepo.Signature{Name: v.Config.Git.Name, Email: v.Config.Git.Email}
	// Commit records the paths before the branch moves, so that if this
	// process dies before git's index follows, the next transaction's
	// UpdateIndex brings the index up to this commit.
	h, err := v.Repo.Commit(changes, tx.message(), who, tx.now)
	if err != nil {
		return nil, err
	}
	settle() // HEAD holds what waited (or held it already)
	if h.IsZero() {
		return &Result{Events: tx.events}, nil
	}
	res := &Result{Commit: h.String(), Events: tx.events}
	if err := v.Repo.UpdateIndex(h, changes); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%v (the commit landed; git status may show the files as changed until the next write)", err))
	}
	return res, nil
}

// prepareSegment repairs a torn last line and picks the segment the events go
// to: the last one, unless it is full or a day old.
func (tx *Tx) prepareSegment(tail *tailState, rollback *undo) (Segment, string, error) {
	v := tx.v
	if err := tx.repairTorn(tail); err != nil {
		return Segment{}, "", err
	}
	want := segmentFor(tx.now)
	switch {
	case !tail.exists:
		return want, tail.tip, nil
	case tail.seg.Less(want) && !tail.seg.sameDay(want):
		return want, tail.tip, nil // a new day opens a new segment
	case tail.size > 0 && tail.size >= v.Config.Ledger.SegmentBytes:
		next := tail.seg
		next.N++
		return next, tail.tip, nil
	default:
		// The same day, or the clock went backwards: keep appending to the
		// last segment so the chain order stays the file order.
		return tail.seg, tail.tip, nil
	}
}
