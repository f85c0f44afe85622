package hooks

// Model-written session summaries (docs/EXECUTORS.md, "Summaries";
// docs/HOOKS.md, "Jobs"): when memvault.toml's [summarise] names an active
// executor, a summarize job asks it for the summary before its
// transaction, without the vault lock. The call takes seconds, so only a
// stop runs such a job: the harnesses wait minutes for a stop hook, but a
// second or so for a session end or a compaction, and a prompt submit and
// a session start are on the user's path and run no jobs at all. At the
// other events the job waits in the queue, with the jobs of its session
// behind it.

import (
	"context"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/lineage"
)

// stopModelLimit caps a model's summary in a stop of a harness that
// kills its hooks after 5 s (OpenCode's and OpenClaw's plugins run each
// hook with a 5 s timeout; docs/HOOKS.md, "Time").
const stopModelLimit = 3 * time.Second

// modelEvent reports whether this event may ask an executor for a
// summary: a stop only.
func (r *Runner) modelEvent() bool { return r.ev == Stop }

// modelLimit is the most a summary's executor may take in this hook, 0
// for [summarise]'s own timeout.
func (r *Runner) modelLimit() time.Duration {
	switch r.Harness.Name {
	case "opencode", "openclaw":
		return stopModelLimit
	}
	return 0
}

// waitsForModel reports whether a summarize job must wait for an event
// that may ask a model: [summarise] names an active executor and this
// event is not a stop. It reads memvault.toml once per runner of the
// queue (summarising caches it).
func (r *Runner) waitsForModel(summarising func() bool) bool {
	return !r.modelEvent() && summarising()
}

// sessionModel asks for the model's summary of the job's session, when
// there is a summariser; nil otherwise, and at an event that may not ask
// one (the job then runs only when no active executor is named, and the
// node says why it is deterministic).
func (r *Runner) sessionModel(t vault.TranscriptRef) (*lineage.Model, error) {
	opts := lineage.ModelOptions{Limit: r.modelLimit(), NoCall: !r.modelEvent()}
	return lineage.SessionModel(context.Background(), r.V, t, opts)
}
