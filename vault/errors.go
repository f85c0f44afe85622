package vault

import (
	"errors"
	"fmt"
)

// The error classes every command maps onto an exit code. They are sentinel
// values so that callers can test with errors.Is while the message itself
// stays specific ("thread \"x\": malformed key, want kind:slug").
var (
	// ErrInvalid marks input the user must change: empty text, an unknown
	// kind, a malformed thread key, a value out of range.
	ErrInvalid = errors.New("invalid input")
	// ErrNotFound marks a missing vault, event or file.
	ErrNotFound = errors.New("not found")
	// ErrConflict marks a request that contradicts the vault's state, such
	// as closing a commitment twice.
	ErrConflict = errors.New("conflict")
	// ErrBusy marks a lock that could not be taken in time.
	ErrBusy = errors.New("vault busy")
	// ErrCorrupt marks a ledger or repository that fails verification.
	ErrCorrupt = errors.New("vault corrupt")
	// ErrIO marks a failure of the file system underneath the vault: a full
	// or read-only disk, a permission problem.
	ErrIO = errors.New("i/o failure")
)

// Error is a classified error with an optional hint the user can act on.
// Its message is the one line a user sees; the class decides the exit code.
type Error struct {
	Class error  // one of the sentinel classes above
	Msg   string // "subject: problem", lower case, no final period
	Hint  string // optional; printed on its own line
	Err   error  // optional underlying cause, reachable with errors.As
}

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

func newErr(class error, format string, args ...any) *Error {
	return &Error{Class: class, Msg: fmt.Sprintf(format, args...)}
}

// withHint attaches a hint to e and returns it, for one-line construction.
func (e *Error) withHint(format string, args ...any) *Error {
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

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
