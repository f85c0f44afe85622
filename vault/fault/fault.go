// Package fault holds the classified errors memvault's packages return.
//
// A command's exit code is decided by the class of the error it failed with,
// and only the command line's entry point turns a class into a code
// (docs/API.md lists them). So every package that can fail in a way a user
// should tell apart (bad input, a missing file, a busy lock, a full disk)
// returns a *Error of one of the classes below, and the class survives any
// wrapping because callers test it with errors.Is. The package is a leaf: it
// imports only the standard library, so that any package can use it.
package fault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// The error classes. They are sentinel values so that a caller can test the
// class with errors.Is while the message stays specific
// ("thread \"x\": malformed key, want kind:slug").
var (
	// ErrInvalid marks input the user must change: empty text, an unknown
	// kind, a malformed thread key, a value out of range (exit 2).
	ErrInvalid = errors.New("invalid input")
	// ErrNotFound marks a missing vault, event or file (exit 3).
	ErrNotFound = errors.New("not found")
	// ErrConflict marks a request that contradicts the vault's state, such
	// as closing a commitment twice (exit 4).
	ErrConflict = errors.New("conflict")
	// ErrBusy marks a lock that could not be taken in time (exit 5).
	ErrBusy = errors.New("vault busy")
	// ErrCorrupt marks a ledger or repository that fails verification
	// (exit 6).
	ErrCorrupt = errors.New("vault corrupt")
	// ErrIO marks a failure of the file system underneath the vault: a full
	// or read-only disk, a permission problem (exit 7).
	ErrIO = errors.New("i/o failure")
	// ErrRemote marks a sync whose remote cannot be used: none configured,
	// unreachable, or holding something that is not a vault (exit 8). A
	// remote that diverged beyond what the merge drivers resolve is a
	// conflict, not a remote problem.
	ErrRemote = errors.New("remote problem")
	// ErrForbidden marks a write the vault's policy refuses: an event of a
	// kind its source may not write (a constraint from an agent's control
	// line, a policy from MCP). The refusal itself is recorded as a
	// violation event (exit 10; docs/POLICY.md).
	ErrForbidden = errors.New("forbidden by policy")
)

// Error is a classified error with an optional hint the user can act on.
// Its message is the one line a user sees; the class decides the exit code.
type Error struct {
	Class error  // one of the sentinel classes above
	Msg   string // "subject: problem", lower case, no final period
	Hint  string // optional; printed on its own line
	Err   error  // optional underlying cause, reachable with errors.As
}

// Error returns the message, or the cause's when there is no message of
// its own.
func (e *Error) Error() string {
	if e.Err != nil && e.Msg == "" {
		return e.Err.Error()
	}
	return e.Msg
}

// Unwrap lets errors.Is find both the class and the underlying cause.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Class, e.Err}
	}
	return []error{e.Class}
}

// New returns an error of class with a message formatted as by fmt.Sprintf.
func New(class error, format string, args ...any) *Error {
	return &Error{Class: class, Msg: fmt.Sprintf(format, args...)}
}

// WithHint sets e's hint and returns e, so that an error and what to do
// about it are built in one expression.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// HintOf returns the hint carried by err, or "".
func HintOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}

// IO classifies a failure of operation op ("write MEMORY.md") on the file
// system as ErrIO, so that a full or read-only disk is reported as such,
// with a hint, instead of as an internal error. An error that is already
// classified is returned as it is: its class is the more specific one.
func IO(op string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	msg := op + ": " + describeErrno(err)
	fe := &Error{Class: ErrIO, Msg: msg, Err: err}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		fe.Hint = "free some space; the vault was left as it was before this command"
	case errors.Is(err, syscall.EROFS):
		fe.Hint = "the vault is on a read-only file system; remount it read-write"
	case errors.Is(err, fs.ErrPermission):
		fe.Hint = "check the owner and permissions of the vault directory"
	}
	return fe
}

// Wrap names operation op in err. A failure of the file system (a path
// error, a full or read-only disk) is classified as IO would; a classified
// error keeps its class; anything else, such as a malformed file, is only
// wrapped, so that its own message is what the user reads.
func Wrap(op string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EROFS) {
		return IO(op, err)
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

// describeErrno returns the bare system message ("no space left on device")
// without the path that os errors repeat, since op already names the file.
func describeErrno(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	return fmt.Sprint(err)
}
