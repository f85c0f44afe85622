package ops

import (
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/scope"
)

// CurrentThread is the thread a front end works in when it is not told to
// work in none (docs/RETRIEVAL.md, "The current thread"): thread when one
// was named (a key, checked), else the thread of the working folder dir
// when scope.WorkThread gives one, the rule the hooks and the command line
// share. fromDir reports the last case, which the front end says aloud.
// dir "" has no thread.
func CurrentThread(v *vault.Vault, thread, dir string) (current string, fromDir bool, err error) {
	if thread != "" {
		th, err := vault.ParseThread(thread)
		if err != nil {
			return "", false, err
		}
		return th.String(), false, nil
	}
	if dir == "" {
		return "", false, nil
	}
	t, _, err := scope.WorkThread(v, dir)
	return t, t != "", err
}
