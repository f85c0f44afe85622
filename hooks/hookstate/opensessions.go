package hookstate

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// The open-sessions registry lists, per harness, the sessions that started
// and have not ended, each as the job to queue should its end never come
// (OpenCode has no session end; OpenClaw's needs its Gateway). It lives in
// .state/hooks/open-<harness>.json, a JSON array of jobs, and is changed
// only under a flock on open-<harness>.json.lock, so that two sessions
// starting or ending at once do not each write back the list as they read
// it, losing the other's change.

// EditOpenSessions replaces the open-sessions list of harness with what
// edit returns for the current one, under the registry's lock, waiting at
// most wait for it. Without the lock in time it changes nothing and fails
// with vault.ErrBusy (see vault.IsBusy). edit runs under the lock and should be quick.
func EditOpenSessions(v *vault.Vault, harness string, wait time.Duration, edit func(open []Job) []Job) error {
	if err := fileio.CheckName("harness", harness); err != nil {
		return err
	}
	path := filepath.Join(v.Root, filepath.FromSlash(hookStateDir), "open-"+harness+".json")
	if err := v.Files().MkdirAll(filepath.Dir(path)); err != nil {
		return fault.IO("create "+hookStateDir, err)
	}
	if err := v.Files().Check(path + ".lock"); err != nil {
		return err
	}
	lk := flock.New(path + ".lock")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ok, err := lk.TryLockContext(ctx, 5*time.Millisecond)
	if !ok {
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fault.IO("lock open sessions of "+harness, err)
		}
		return fault.New(vault.ErrBusy, "open sessions of %s: lock busy; gave up after %s", harness, wait)
	}
	defer lk.Unlock()
	var open []Job
	if data, err := v.Files().ReadFile(path); err == nil {
		// A list that does not parse is started afresh: it only decides
		// which sessions get their summary early.
		_ = json.Unmarshal(data, &open)
	}
	data, err := json.Marshal(edit(open))
	if err != nil {
		return err
	}
	return v.Files().WriteAtomic(path, data)
}
