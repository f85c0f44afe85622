package cli

import (
	"os"

	"github.com/memvault/memvault/hooks"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// refreshEnv says how the heads are brought up to date after a write
// (hooks/afterwrite.go, docs/HEADS.md "Freshness"): background (the
// default), inline or off.
const refreshEnv = "MEMVAULT_REFRESH"

// refresher is what every write of this process does after its commit:
// the command line's after each command whose
// access is one transaction and each protocol write, the MCP server's
// after each write tool, the web view's after each write route. A bad
// MEMVAULT_REFRESH is refused before anything is written.
func refresher() (hooks.Refresher, error) {
	mode, err := hooks.ParseRefreshMode(os.Getenv(refreshEnv))
	if err != nil {
		e := fault.New(vault.ErrInvalid, "%v", err)
		return hooks.Refresher{}, e.WithHint("unset %s, or set it to background, inline or off", refreshEnv)
	}
	self, _ := selfPath()
	return hooks.Refresher{Mode: mode, Binary: self}, nil
}
