package vault

import (
	"errors"

	"github.com/memvault/memvault/vault/fault"
)

// Error is a classified error with an optional hint the user can act on. It
// is fault.Error, named here so that callers of the vault need not import
// fault to build or inspect one.
type Error = fault.Error

// The error classes every command maps onto an exit code; see fault for what
// each one means.
var (
	// ErrInvalid marks input the user must change.
	ErrInvalid = fault.ErrInvalid
	// ErrNotFound marks a missing vault, event or file.
	ErrNotFound = fault.ErrNotFound
	// ErrConflict marks a request that contradicts the vault's state.
	ErrConflict = fault.ErrConflict
	// ErrBusy marks a lock that could not be taken in time.
	ErrBusy = fault.ErrBusy
	// ErrCorrupt marks a ledger or repository that fails verification.
	ErrCorrupt = fault.ErrCorrupt
	// ErrIO marks a failure of the file system underneath the vault.
	ErrIO = fault.ErrIO
	// ErrRemote marks a sync remote that cannot be used.
	ErrRemote = fault.ErrRemote
	// ErrForbidden marks a write the vault's policy refuses.
	ErrForbidden = fault.ErrForbidden
)

// HintOf returns the hint carried by err, or "".
func HintOf(err error) string { return fault.HintOf(err) }

func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
