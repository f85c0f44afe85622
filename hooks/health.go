package hooks

// Capture never stops. A vault whose ledger fails the writers' chain check
// (a naive merge, a hand edit) or whose memvault.toml does not parse
// refuses every transaction that records an event or writes a file, but
// still takes transcript lines, which are not chained (vault.Health). A
// hook whose transaction records events together with transcript lines is
// refused whole, so it tries again with the transcript alone: the prompts
// and replies of the turn reach the vault, committed when the normal path
// would have committed them, and the events wait. Control lines are turned
// into events "once each" from the whole transcript, so the first stop
// after a repair records the ones a refused stop could not; queued jobs (a
// summary, a refresh) stay queued until then. The refusal is logged once
// per hook, with what is wrong and what to do, and session start says it at
// the top of the context, where the agent (and through it the person) sees
// it.
//
// Nor does a busy vault stop it. A prompt or a reply that the payload
// carries is stored without the vault lock when the lock does not come
// within the hook's wait: redacted and written to the session's spool,
// which the next transaction of any writer folds into the transcript
// (vault.Spool). The hook log says so, naming the lock's holder.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/transcript"
)

// healthCheck is what a Runner knows of its vault's health: nothing yet,
// or the result of one vault.Health. A hook asks at most once: the answer
// does not change within the few hundred milliseconds a hook runs.
type healthCheck struct {
	known  bool
	h      vault.Health
	logged bool // the refusal was written to the hook log
}

// health returns the vault's health, asking the vault the first time. A
// vault whose health cannot be read is taken as healthy: the transaction
// that follows reports the same failure.
func (r *Runner) health() vault.Health {
	if !r.hc.known {
		h, err := vaultHealth(r.V)
		if err != nil {
			logf(r.V, "%s: vault health: %v", r.Harness.Name, err)
			h = vault.Health{}
		}
		r.hc = healthCheck{known: true, h: h}
	}
	return r.hc.h
}

// vaultHealth is vault.Health, a variable so that a test can count the
// checks a hook makes (each reads every segment's stamp and checks the
// chain of what changed).
var vaultHealth = (*vault.Vault).Health

// healthy records that a transaction which would have been refused on an
// unhealthy vault went through, so session start need not ask.
func (r *Runner) healthy() {
	if !r.hc.known {
		r.hc = healthCheck{known: true}
	}
}

// knownUnhealthy reports whether this hook already found the vault
// refusing structured writes, without asking the vault.
func (r *Runner) knownUnhealthy() bool { return r.hc.known && !r.hc.h.OK() }

// refused reports whether err is the vault refusing a structured write for
// its health: a ledger that fails the chain check (ErrCorrupt), or, with a
// memvault.toml that does not parse, invalid input (the transaction's
// refusal, and the heads' and the protocol's own reads of the file, which
// fail the same way). The first refusal of a hook is logged with the health
// summary; the caller goes on with what it can still do, which is never
// more than storing transcript lines.
func (r *Runner) refused(err error) bool {
	if err == nil || !(errors.Is(err, vault.ErrCorrupt) || errors.Is(err, vault.ErrInvalid)) {
		return false
	}
	h := r.health()
	if !(errors.Is(err, vault.ErrCorrupt) && len(h.Chain) > 0 || h.Config != nil && errors.Is(err, vault.ErrInvalid)) {
		return false
	}
	if !r.hc.logged {
		r.hc.logged = true
		logf(r.V, "%s %s %s: structured writes refused, transcript lines still captured: %s",
			r.Harness.Name, r.ev, r.session, h.Summary())
	}
	return true
}

// commitTranscript commits what the session's transcript holds on disk and
// nothing else: what a lineage event commits when the vault refuses its
// events.
func (r *Runner) commitTranscript(t transcript.Ref) error {
	_, err := r.V.Update(r.txOptions(t, eventLockWait), func(tx *vault.Tx) error {
		return tx.CommitTranscript(t)
	})
	return err
}

// healthWarning is the line session start puts above everything else when
// the vault refuses structured writes: short, since it spends the
// harness's budget, and addressed to the agent, who tells the person.
func healthWarning(h vault.Health) string {
	if h.OK() {
		return ""
	}
	s := h.Summary()
	if len(s) > maxWarning {
		s = strings.ToValidUTF8(s[:maxWarning], "") + "…"
	}
	return fmt.Sprintf("memvault: WARNING: %s. Tell the user; DECISION:/NEXT: lines are recorded once it is fixed.", s)
}

// maxWarning bounds the health summary session start injects: a problem's
// message names a file, a line and an event, well under this.
const maxWarning = 400
