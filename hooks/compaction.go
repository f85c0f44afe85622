package hooks

// Compaction closes the loop: by the time a harness injects context again
// after compacting (Claude Code's SessionStart(compact) comes before its
// PostCompact; Codex's after; OpenCode asks for a fresh start context; OpenClaw
// injects at the next prompt), MEMORY.md and the session's thread head hold
// what the session decided before the compaction.

import (
	"errors"
	"time"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault/continuity"
	"github.com/memvault/memvault/vault/transcript"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/heads"
)

const (
	// compactBudget is what a compaction event may spend in all, the
	// queued jobs it runs first included. A compaction waits on the model
	// for seconds, and the harnesses give these hooks a minute (Claude
	// Code) or more; a second and a half keeps the pause unnoticed.
	compactBudget = 1500 * time.Millisecond
	// minRefreshWait is the least lock wait worth trying a refresh with;
	// with less left, it is queued.
	minRefreshWait = 50 * time.Millisecond
)

// reinjects reports whether the harness injects context again after a
// compaction: it has a compaction-complete event. Gemini CLI has none (its
// PreCompress fires before every model call, and nothing is re-injected).
func (h *Harness) reinjects() bool {
	for _, ev := range h.Native {
		if ev == CompactionComplete {
			return true
		}
	}
	return false
}

// preCompaction imports what the harness wrote before it compacts. Where
// context is injected again after the compaction, the control lines of the
// transcript up to here become events and the heads are refreshed at once:
// Claude Code starts the compacted session (SessionStart, source compact)
// before its PostCompact, so compaction-complete would be too late.
func (r *Runner) preCompaction(t transcript.Ref, p Payload, thread string) error {
	if !r.Harness.reinjects() {
		return r.capture(t, p, thread, captureCommit)
	}
	if err := r.capture(t, p, thread, captureControls|captureCommit); err != nil {
		return err
	}
	r.refreshNow(t, "")
	return nil
}

// refreshNow refreshes MEMORY.md, the heads of the threads this session
// wrote to, and the head of nodeThread (the compaction node's thread, which
// may hold no row of the session), within what is left of compactBudget.
// When the vault lock does not come in time, or the budget is spent, the
// refresh is queued for the next event; session start meanwhile renders
// the heads from the ledger (currentHeads), so what it injects is current
// either way. A head whose lease someone holds is deferred by Refresh
// itself.
func (r *Runner) refreshNow(t transcript.Ref, nodeThread string) {
	j := hookstate.Job{Kind: "refresh", Agent: t.Agent, Session: t.Session, Thread: nodeThread, Harness: r.Harness.Name, On: "compaction"}
	// A vault that refused this hook's events refuses the refresh too: it
	// waits in the queue for the repair.
	if wait := min(compactBudget-time.Since(r.Start), eventLockWait); wait >= minRefreshWait && !r.knownUnhealthy() {
		err := r.refresh(j, "hook "+r.Harness.Name+" refresh", wait)
		if err == nil {
			return
		}
		if !vault.IsBusy(err) && !r.refused(err) {
			logf(r.V, "%s compaction %s: refresh: %v", r.Harness.Name, t.Session, err)
		}
	}
	r.queue(j)
}

// refresh runs a refresh job: MEMORY.md, the heads of the threads the
// job's session wrote to, and the head of the job's thread, if it has one.
func (r *Runner) refresh(j hookstate.Job, command string, wait time.Duration) error {
	if isWriteRefresh(j) {
		return r.refreshAfterWriteJob(j, wait) // afterwrite.go
	}
	// Deferred: the heads ride in the next commit (a session end's flush).
	opts := heads.RefreshOptions{TxOptions: vault.TxOptions{Command: command, Agent: j.Agent, Session: j.Session,
		Harness: j.Harness, LockTimeout: wait, Defer: true}, Trigger: j.On, Memory: true, Affected: true, Protocol: continuity.RefreshHead}
	if th, err := vault.ParseThread(j.Thread); err == nil {
		opts.Threads = []vault.Thread{th}
	}
	_, err := heads.Refresh(r.V, opts)
	return err
}

// currentHeads returns the text of each head (MEMORY.md, CONTINUITY.md, a
// thread head's path) as a refresh would leave it and as the session's
// agent may see it (continuity.AgentHeads): the file when it is current, else
// the render of the ledger merged with the file's hand edits; for an agent
// that may not see some rows of the ledger, the render of the rows it may
// see. A head never rendered gives "". Should that fail, the files are
// read as they are.
func (r *Runner) currentHeads(names ...string) []string {
	out := make([]string, len(names))
	texts, err := continuity.AgentHeads(r.V, r.Agent, names...)
	if err != nil && !errors.Is(err, vault.ErrNotFound) && !r.refused(err) {
		logf(r.V, "%s session-start: render heads: %v", r.Harness.Name, err)
	}
	for i, h := range names {
		if err != nil {
			out[i] = readFile(r.V, h)
		} else {
			out[i] = string(texts[i])
		}
	}
	return out
}
