package cli

import (
	"errors"
	"testing"

	"github.com/memvault/memvault/cmd/memvault/internal/mcp"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// TestMCPErrorsMatchExitCodes: a failed MCP tool call names its class and
// code as a failed command does with --json, for every class.
func TestMCPErrorsMatchExitCodes(t *testing.T) {
	errs := []error{errors.New("a bug")}
	for _, class := range []error{vault.ErrInvalid, vault.ErrNotFound, vault.ErrConflict, vault.ErrBusy,
		vault.ErrCorrupt, vault.ErrIO, vault.ErrRemote, vault.ErrForbidden} {
		errs = append(errs, fault.New(class, "subject: problem"))
	}
	names := errorClasses()
	for _, err := range errs {
		te := mcp.Classify(err)
		if code := exitCode(err); te.Code != code || te.Class != names[code] {
			t.Errorf("%v: MCP says %s (%d), the command line %s (%d)", err, te.Class, te.Code, names[code], code)
		}
		if te.Retryable != errors.Is(err, vault.ErrBusy) {
			t.Errorf("%v: retryable %v", err, te.Retryable)
		}
	}
}
