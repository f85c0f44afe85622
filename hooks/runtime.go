package hooks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memvault/memvault/render"
	"github.com/memvault/memvault/vault/lineage"
	"github.com/memvault/memvault/vault/scope"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/recall"
	"github.com/memvault/memvault/vault/transcript"
)

// Lock waits: a prompt must never wait long on memory, and a session end has
// a second or so in all (Codex: 1 s by default, Claude Code: 1.5 s).
const (
	promptLockWait = 300 * time.Millisecond
	eventLockWait  = 700 * time.Millisecond
	jobBudget      = 400 * time.Millisecond
	// The import of a harness transcript starts no window of it (256 KiB,
	// at most about 150 ms of work) later than this after the hook's
	// start; what is left is read by the session's next event, or, after
	// a session end, by a queued import job (docs/HOOKS.md, "Time"). A stop
	// holds up the end of the user's turn; a session end has 1.5 s in all
	// (Claude Code) and its commit and jobs to do after the import.
	stopImportBudget = 700 * time.Millisecond // stop, pre-compaction
	endImportBudget  = 500 * time.Millisecond // session-end, compaction-complete
	// indexStepBytes is the index catch-up a job runner does, about
	// indexStepTime of work (the index takes in about 2 MiB/s).
	indexStepBytes = 256 << 10
	indexStepTime  = 150 * time.Millisecond
)

// Runner runs runtime events against a vault for one harness.
type Runner struct {
	V       *vault.Vault
	Harness *Harness
	Agent   string
	Thread  string // MEMVAULT_THREAD, if set: wins over the derived thread
	Start   time.Time
	// Worker is the command line of the background job worker (`memvault
	// --vault ROOT jobs run --background`), which an event that finds a
	// summary for a model to write starts, detached, instead of waiting
	// for the model (worker.go). Empty: no worker is started, and such a
	// job waits for `memvault jobs run`.
	Worker []string
	// Jobs is where queued jobs run: JobsBackground ("" too) hands them
	// to Worker, JobsInline runs them in the hook (jobs.go).
	Jobs JobsMode
	// Refresh is how a stop that recorded memory brings the heads up to
	// date (afterwrite.go); "" refreshes nothing then.
	Refresh RefreshMode

	worker  bool        // this runner is the job worker (worker.go): no hook's budget
	ev      Event       // the event being run, for the hook log
	session string      // its session
	hc      healthCheck // what this hook found of the vault's health (health.go)
	// assumeHealthy makes startContext leave out the health warning
	// without asking: session start asks only when its transaction fails.
	assumeHealthy bool
	behind        *importedFrom // the transcript import this event left unfinished at its budget
}

// Run executes ev and returns the context to inject ("" for none).
func (r *Runner) Run(ev Event, p Payload) (string, error) {
	if p.SessionID == "" {
		return "", fmt.Errorf("%s %s: payload has no session_id", r.Harness.Name, ev)
	}
	p.SessionID = sessionKey(r.V, p.SessionID)
	t := transcript.Ref{Agent: r.Agent, Session: p.SessionID}
	r.ev, r.session = ev, p.SessionID
	thread := r.Thread
	if thread == "" {
		thread = scope.ProjectThread(p.CWD)
	}
	// Work a previous event left for later is the detached worker's: a
	// stop or a compaction starts it when jobs wait (a session end, below,
	// after queueing its own), and runs no job on the agent's path. A
	// session start runs only the deferred head refreshes (its context
	// must be fresh); a prompt nothing. Without a worker (none configured,
	// MEMVAULT_JOBS=inline, or it cannot start) a stop, compaction or end
	// runs the queue itself within its budget (jobs.go, docs/HOOKS.md
	// "Jobs").
	switch ev {
	case PromptSubmit, SessionEnd:
	case SessionStart:
		r.runDeferred()
	default:
		if !r.handOff(false) {
			r.runJobs()
		}
	}
	switch ev {
	case SessionStart:
		return r.sessionStart(t, p, thread)
	case PromptSubmit:
		return r.promptSubmit(t, p, thread)
	case Stop:
		return "", r.capture(t, p, thread, captureControls)
	case PreCompaction:
		return "", r.preCompaction(t, p, thread)
	case CompactionComplete:
		return "", r.compactionComplete(t, p, thread)
	case SessionEnd:
		return "", r.sessionEnd(t, p, thread)
	}
	return "", fmt.Errorf("unknown event %q", ev)
}

// sessionKey is the key the session a harness calls id is kept under: id
// itself, or, when the vault's redaction rules find a credential in it,
// "redacted-" and 16 hex digits of its SHA-256. The vault refuses an
// identity that holds a credential, and a hook must not drop the session's
// prompt over its name: the hashed key is the same for every event of the
// session, so it captures as any other (docs/HOOKS.md, "Session ids").
func sessionKey(v *vault.Vault, id string) string {
	if _, counts := v.Redact(id); len(counts) == 0 {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "redacted-" + hex.EncodeToString(sum[:8])
}

func (r *Runner) txOptions(t transcript.Ref, wait time.Duration) vault.TxOptions {
	return vault.TxOptions{Command: "hook " + r.Harness.Name, Agent: t.Agent, Session: t.Session,
		Harness: r.Harness.Name, LockTimeout: wait}
}

func (r *Runner) sessionStart(t transcript.Ref, p Payload, thread string) (string, error) {
	if p.Source == "compact" || p.Source == "clear" {
		r.resetInjected(t) // what the compaction dropped may be injected again
	}
	r.closeEarlierSessions(t, thread)
	// The context first: the event records what it injected (the ids it
	// shows, its size), which `memvault metrics` measures retention and
	// efficiency by (docs/LINEAGE.md, "Metrics"). The event is no row a
	// context shows, so the order changes nothing of the text. The context
	// is made as for a healthy vault: the transaction below checks the
	// chain and the configuration anyway, so a second check (vault.Health)
	// would only repeat it; when the transaction fails, the health is asked
	// and the context made again with the warning.
	r.assumeHealthy = true
	text, shown := r.startContext(thread, p.CWD)
	r.assumeHealthy = false
	// Bookkeeping: the start rides in the session's first commit that
	// records memory, or its end's (docs/HOOKS.md, "Commits").
	opts := r.txOptions(t, eventLockWait)
	opts.Defer = true
	_, err := r.V.Update(opts, func(tx *vault.Tx) error {
		data, _ := json.Marshal(map[string]any{"source": p.Source, "cwd": p.CWD, "shown": append([]string{}, shown...),
			"injected_chars": utf8.RuneCountInString(text), "injected_tokens": render.Tokens(text)})
		tx.Append(&vault.Event{Kind: "session.started", Thread: thread, Data: data, Source: "hook",
			Text: fmt.Sprintf("%s session %s (%s)", r.Harness.Name, t.Session, orDefault(p.Source, "start"))})
		return nil
	})
	switch {
	case err == nil:
		r.healthy() // the chain was checked and the event written: nothing to warn about
	case r.refused(err):
		// Logged once; the context below starts with the warning.
	default:
		// Recording the session is not worth losing the context over.
		logf(r.V, "%s session-start %s: record: %v", r.Harness.Name, t.Session, err)
	}
	if err != nil && !r.health().OK() {
		text, shown = r.startContext(thread, p.CWD) // with the warning first
	}
	// What session start showed, a prompt of the session does not show
	// again; a compaction (above) forgets it with the context it dropped.
	r.markInjected(t, shown)
	return text, nil
}

func (r *Runner) promptSubmit(t transcript.Ref, p Payload, thread string) (string, error) {
	if strings.TrimSpace(p.Prompt) == "" {
		return "", nil
	}
	// The prompt is on disk at once, or in the spool when the vault is
	// busy; it is committed at the next lineage event of the session.
	err := r.store(t, promptLockWait, "prompt", transcript.Message{ID: p.PromptID, Role: transcript.RoleUser,
		Speaker: "user", Text: p.Prompt, Source: transcript.Source{Format: transcript.HookFormat}})
	if err != nil {
		logf(r.V, "%s prompt-submit %s: store prompt: %v", r.Harness.Name, t.Session, err)
	}
	return r.relevant(t, p.Prompt, thread), nil
}

// store stores one message of the payload in t's transcript without a
// commit, waiting at most wait for the vault lock; a busy vault gets it
// through the spool instead, and the hook log says so (what names the
// message: "prompt", "reply"). Only the lock's wait sends a message to
// the spool: a transaction without a commit fails busy nowhere else, and
// nothing was written when it does.
func (r *Runner) store(t transcript.Ref, wait time.Duration, what string, m transcript.Message) error {
	opts := r.txOptions(t, wait)
	opts.NoCommit = true
	_, err := r.V.Update(opts, func(tx *vault.Tx) error {
		_, _, err := tx.AppendText(t, []transcript.Message{m})
		return err
	})
	if !vault.IsBusy(err) {
		return err
	}
	if serr := r.V.Spool(t, []transcript.Message{m}); serr != nil {
		return fmt.Errorf("%w; spool: %v", err, serr)
	}
	logf(r.V, "%s %s %s: %v; the %s is spooled and goes in with the next write", r.Harness.Name, r.ev, t.Session, err, what)
	return nil
}

// relevant finds structured rows and nodes the prompt is about that this
// session has not been shown yet.
func (r *Runner) relevant(t transcript.Ref, prompt, thread string) string {
	var lines []string
	var fresh []string
	res, err := recall.Recall(r.V, recall.RecallOptions{Query: clipQuery(prompt), Agent: r.Agent, Thread: thread,
		Session: t.Session, Tiers: []string{recall.TierStructured, recall.TierHeads}, Limit: 3, NoHeadFiles: true, NoEmbed: true})
	if err != nil {
		return "" // no searchable words, an unknown thread: nothing to add
	}
	if len(res.Hits) == 0 {
		return "" // nothing found: what was shown is not read
	}
	seen := r.injected(t)
	for _, h := range res.Hits {
		if seen[h.ID] || h.Kind == "head" {
			continue
		}
		lines = append(lines, fmt.Sprintf("- %s %s: %s", h.Kind, h.ID, h.Text))
		fresh = append(fresh, h.ID)
	}
	if len(lines) == 0 {
		return ""
	}
	r.markInjected(t, fresh)
	return fit([]string{"memvault: memory related to this prompt\n" + strings.Join(lines, "\n")}, r.Harness.ContextLimit)
}

func clipQuery(s string) string {
	if len(s) > recall.MaxQueryBytes {
		s = s[:recall.MaxQueryBytes]
		for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 {
			s = s[:len(s)-1]
		}
	}
	return s
}

// captureMode says what a capture does besides importing: a turn's stop
// extracts control lines and commits only when they recorded something; a
// lineage event (compaction, session end) commits what the session has
// pending.
type captureMode int

const (
	captureControls captureMode = 1 << iota
	captureCommit
)

// capture imports what the harness wrote since the last import (or, with
// no transcript file, the last assistant message), then extracts control
// lines and commits, as mode asks. The lines are durable on disk at once
// (DESIGN §3). They are committed with the events control lines record,
// which reach git at once, or at the session's next lineage event, so a
// turn that records nothing makes no commit. The lines a commit carries are
// the whole transcript as it is on disk, so lines left uncommitted by a
// crash go with the session's next commit. While the import is behind (a
// large transcript met for the first time, read a budget at a time), the
// control lines wait: they are taken from the whole transcript, once each,
// at the first capture that has caught up.
func (r *Runner) capture(t transcript.Ref, p Payload, thread string, mode captureMode) error {
	imported, err := r.importTranscript(t, p)
	if err != nil {
		return err
	}
	opts := r.txOptions(t, eventLockWait)
	// A capture before a compaction or at a session end is deferred: its
	// lines and control lines ride in the compaction's one commit, or the
	// session end's, the flush after its summary and refresh (jobs.go).
	opts.Defer = mode&captureCommit != 0
	res, err := r.V.Update(opts, func(tx *vault.Tx) error {
		if mode&captureControls != 0 && r.behind == nil {
			if err := lineage.ExtractControls(tx, t, thread); err != nil && !errors.Is(err, vault.ErrNotFound) {
				return err
			}
		}
		if mode&captureCommit == 0 && len(tx.Events()) == 0 {
			return nil // nothing recorded: the lines wait on disk for a lineage event
		}
		if imported != nil {
			if err := lineage.RecordImport(tx, t, imported.format, imported.source); err != nil {
				return err
			}
		}
		return tx.CommitTranscript(t)
	})
	if r.refused(err) {
		// The vault takes no events: the turn's lines are on disk already,
		// and go to git as the normal path would have sent them (a refused
		// transaction had events to commit). Its control lines become
		// events at the first stop after a repair.
		return r.commitTranscript(t)
	}
	if err == nil && mode == captureControls {
		r.afterStop(res) // afterwrite.go
	}
	return err
}

// importedFrom names the harness transcript file a capture imports from.
type importedFrom struct {
	format transcript.Format
	source string
}

// importBudget is how long after the hook's start the event's transcript
// import may start reading another window.
func (r *Runner) importBudget() time.Duration {
	switch r.ev {
	case SessionEnd, CompactionComplete:
		return endImportBudget
	}
	return stopImportBudget
}

// importTranscript stores what the harness wrote since the last import,
// without a commit: from its transcript file when there is one (and says
// which), else the payload's last assistant message. A transcript_path that
// is not a regular file (a named pipe, a device, a folder, a symbolic link)
// is never opened for reading in a way that could block: it is refused, the
// refusal logged, and the event goes on as without a file. The import stops
// at the event's budget; r.behind then names it.
func (r *Runner) importTranscript(t transcript.Ref, p Payload) (*importedFrom, error) {
	opts := r.txOptions(t, eventLockWait)
	opts.NoCommit = true
	if p.TranscriptPath != "" && r.Harness.Format != "" {
		f, err := lineage.OpenRegular(p.TranscriptPath)
		switch {
		case err == nil:
			f.Close()
			format, err := transcript.ParseFormat(r.Harness.Format)
			if err != nil {
				return nil, err
			}
			rep, err := lineage.ImportUntil(r.V, opts, t, format, p.TranscriptPath, r.Start.Add(r.importBudget()))
			if err != nil {
				return nil, err
			}
			imported := &importedFrom{format: format, source: p.TranscriptPath}
			if rep.More {
				r.behind = imported
			}
			return imported, nil
		case !errors.Is(err, vault.ErrNotFound):
			logf(r.V, "%s %s %s: transcript not read: %v", r.Harness.Name, r.ev, t.Session, err)
		}
	}
	if strings.TrimSpace(p.LastAssistant) == "" {
		return nil, nil
	}
	return nil, r.store(t, eventLockWait, "reply", transcript.Message{Role: transcript.RoleAssistant,
		Speaker: r.Harness.Name, Text: p.LastAssistant, Source: transcript.Source{Format: transcript.HookFormat}})
}

// compactionComplete records the compaction as a node of the session's
// thread and brings the heads up to date at once (refreshNow), so the
// context injected after it holds what the session did before it.
func (r *Runner) compactionComplete(t transcript.Ref, p Payload, thread string) error {
	imported, err := r.importTranscript(t, p)
	if err != nil {
		return err
	}
	r.resetInjected(t)
	nodeThread := ""
	// A compaction is one commit: its node, the lines before it, the
	// heads refreshed after it and whatever waits, flushed below.
	opts := r.txOptions(t, eventLockWait)
	opts.Defer = true
	_, err = r.V.Update(opts, func(tx *vault.Tx) error {
		// The turn the compaction interrupted may have had no stop yet.
		// (While the import is behind, its control lines wait for it.)
		if r.behind == nil {
			if err := lineage.ExtractControls(tx, t, thread); err != nil && !errors.Is(err, vault.ErrNotFound) {
				return err
			}
		}
		if imported != nil {
			if err := lineage.RecordImport(tx, t, imported.format, imported.source); err != nil {
				return err
			}
		}
		if err := tx.CommitTranscript(t); err != nil {
			return err
		}
		opts := lineage.CompactOptions{Summary: summaryBlock(p.CompactSummary), Thread: thread}
		n, _, err := lineage.Compact(tx, t, opts)
		if errors.Is(err, vault.ErrNotFound) && opts.Summary == "" {
			// The harness gave no summary and wrote none in its transcript:
			// record the compaction anyway, so the lineage shows it.
			opts.Summary = "(the harness reported a compaction without a summary)"
			n, _, err = lineage.Compact(tx, t, opts)
		}
		if err == nil && len(n.Threads) > 0 {
			nodeThread = n.Threads[0]
		}
		return err
	})
	if r.refused(err) {
		// No compaction node on a vault that takes no events: the
		// transcript (which holds the harness's own summary where it
		// writes one) is committed, and the refresh waits in the queue.
		err = r.commitTranscript(t)
	}
	if err != nil {
		return err
	}
	r.refreshNow(t, nodeThread)
	// Busy or refused, what waits rides in the next commit.
	if _, err := r.V.Flush(r.txOptions(t, eventLockWait)); err != nil && !vault.IsBusy(err) && !r.refused(err) {
		logf(r.V, "%s compaction %s: commit: %v", r.Harness.Name, t.Session, err)
	}
	return nil
}

// summaryBlock keeps the <summary> block of a compaction summary that has
// one (Claude Code writes an <analysis> scratchpad before it): the text
// between the first "<summary>" and the first "</summary>" after it, if
// that is not blank.
func summaryBlock(s string) string {
	_, after, ok := strings.Cut(s, "<summary>")
	if !ok {
		return s
	}
	inner, _, ok := strings.Cut(after, "</summary>")
	if !ok || strings.TrimSpace(inner) == "" {
		return s
	}
	return strings.TrimSpace(inner)
}

// Injection bookkeeping: which rows and nodes a session was shown, kept
// as the session's marks in the vault, reset when the harness compacts (the
// context is gone). Losing a mark costs a repeat, so failures are logged
// and the event goes on.

func (r *Runner) injected(t transcript.Ref) map[string]bool {
	m, err := hookstate.SessionMarks(r.V, t)
	if err != nil {
		logf(r.V, "%s session %s: what was shown: %v", r.Harness.Name, t.Session, err)
	}
	return m
}

func (r *Runner) markInjected(t transcript.Ref, ids []string) {
	if err := hookstate.AddSessionMarks(r.V, t, ids...); err != nil {
		logf(r.V, "%s session %s: record what was shown: %v", r.Harness.Name, t.Session, err)
	}
}

func (r *Runner) resetInjected(t transcript.Ref) {
	if err := hookstate.ResetSessionMarks(r.V, t); err != nil {
		logf(r.V, "%s session %s: forget what was shown: %v", r.Harness.Name, t.Session, err)
	}
}

// Deferred jobs: work a hook queued in the vault's job queue because it may
// not fit in the time the harness gives it. Each job is idempotent
// (summarising twice finds the node made), so a job run again after a
// runner died in it is harmless.

func readFile(v *vault.Vault, rel string) string {
	data, err := v.ReadFile(rel)
	if err != nil {
		return ""
	}
	return string(data)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// logf appends one line to the vault's hook log. Hooks report problems
// there, never on the harness's screen.
func logf(v *vault.Vault, format string, args ...any) {
	if v == nil {
		return
	}
	LogTo(v.Root, fmt.Sprintf(format, args...))
}

// LogTo appends one timestamped line to the hook log of the vault at root
// (.logs/hooks.log), for code that has a vault's root and no open vault.
// A hook that cannot log has nowhere left to report it.
func LogTo(root, line string) { _ = hookstate.AppendHookLog(root, line) }
