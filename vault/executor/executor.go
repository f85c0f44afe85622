// Package executor runs external executors (other agents' CLIs, local
// models, scripts) for memvault: the registry kept in memvault.toml, the
// runner (a sanitised environment, a process group of its own, bounded
// output), the response envelope and its checksum, and delegation, whose
// verified results are recorded through the vault's one transaction path.
// docs/EXECUTORS.md is the contract.
package executor

import (
	"errors"
	"fmt"
	"time"

	"github.com/memvault/memvault/vault/fault"
)

// Modes of an executor: how its output is read.
const (
	ModeEnvelope = "envelope" // it answers with the response envelope
	ModePlain    = "plain"    // it prints text; memvault wraps and hashes it
)

// Statuses of a registered executor.
const (
	StatusActive   = "active"
	StatusInactive = "inactive"
)

// Bounds and defaults (docs/EXECUTORS.md).
const (
	DefaultTimeout     = 5 * time.Second
	PingTimeout        = 2 * time.Second
	MaxOutput          = 1 << 20   // bytes of stdout read; one more is too_large
	MaxSummary         = 64 << 10  // bytes of result.summary
	MaxResult          = 128 << 10 // bytes of the result object, canonical: what the ledger keeps
	stderrKeep         = 4 << 10   // the tail of stderr kept for messages
	DefaultConcurrency = 5
	MinConcurrency     = 3
	MaxConcurrency     = 12
	MaxWeight          = MaxConcurrency
	// DefaultCapability is what an executor can do when it says nothing
	// of it: a plain one, or an envelope one whose ping reply names none.
	DefaultCapability = "summarise"
	maxCapabilities   = 32
)

// Error codes of the taxonomy (docs/EXECUTORS.md, "Errors and retries").
const (
	CodeSpawn       = "spawn"
	CodeCrash       = "crash"
	CodeTimeout     = "timeout"
	CodeMalformed   = "malformed"
	CodeChecksum    = "checksum"
	CodeTooLarge    = "too_large"
	CodeExecutor    = "executor"
	CodeLockTimeout = "lock_timeout"
	CodeAuditWrite  = "audit_write"
	CodeDependency  = "dependency" // not run: a task it waits for failed
	// The executor's own disk and memory (its run failed because of them).
	CodeDisk        = "disk"         // ENOSPC, EDQUOT, EROFS, EIO, or its unwritable working folder
	CodeMemoryLimit = "memory_limit" // out of memory under its memory_limit
)

// Error is one failure of a run or of its recording, with its code.
type Error struct {
	Code string
	Msg  string
	Err  error // the cause, when there is one
}

func (e *Error) Error() string { return e.Msg }

// Unwrap gives the error its fault class, so the command line picks the
// exit code the taxonomy names.
func (e *Error) Unwrap() []error {
	var class error
	switch e.Code {
	case CodeSpawn:
		class = fault.ErrNotFound
	case CodeTimeout, CodeLockTimeout:
		class = fault.ErrBusy
	case CodeChecksum:
		class = fault.ErrCorrupt
	case CodeTooLarge, CodeMemoryLimit:
		class = fault.ErrInvalid
	case CodeAuditWrite, CodeDisk:
		class = fault.ErrIO
	case CodeDependency:
		class = fault.ErrConflict
	}
	out := []error{}
	if class != nil {
		out = append(out, class)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

func errorf(code string, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// CodeOf is the taxonomy's code of err, "" when it has none.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Retried reports how many tries a failure with code gets in all: 1 for
// one that a retry would only repeat (spawn, too_large, executor,
// dependency; disk, whose space or permissions a retry 100 ms later does
// not bring back; memory_limit, which the same task under the same bound
// hits again).
func Retried(code string) int {
	switch code {
	case CodeCrash, CodeTimeout, CodeMalformed, CodeChecksum:
		return 3
	case CodeLockTimeout:
		return 5
	case CodeAuditWrite:
		return 3
	}
	return 1
}

// Backoff is the wait before try n+1 after try n failed (n from 1):
// 100 ms doubling, at most 2 s, plus up to a fifth of it at random.
func Backoff(n int, jitter func(time.Duration) time.Duration) time.Duration {
	d := 100 * time.Millisecond << (n - 1)
	if n > 5 || d > 2*time.Second {
		d = 2 * time.Second
	}
	if jitter != nil {
		d += jitter(d / 5)
	}
	return d
}
