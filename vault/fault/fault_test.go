package fault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

func TestClassSurvivesWrapping(t *testing.T) {
	cause := errors.New("boom")
	err := fmt.Errorf("outer: %w", &Error{Class: ErrCorrupt, Msg: "ledger: bad hash", Err: cause})
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, cause) {
		t.Fatalf("class or cause lost in %v", err)
	}
	if errors.Is(err, ErrIO) {
		t.Fatal("an error matched a class it does not have")
	}
}

func TestNewWithHint(t *testing.T) {
	err := error(New(ErrInvalid, "thread %q: malformed key", "x").WithHint("use %s", "kind:slug"))
	if err.Error() != `thread "x": malformed key` || HintOf(err) != "use kind:slug" {
		t.Fatalf("got %q, hint %q", err, HintOf(err))
	}
	if HintOf(errors.New("plain")) != "" {
		t.Fatal("a plain error has a hint")
	}
}

func TestIO(t *testing.T) {
	for _, tc := range []struct {
		cause    error
		msg      string
		withHint bool
	}{
		{&fs.PathError{Op: "open", Path: "/v/x", Err: syscall.ENOSPC}, "write x: no space left on device", true},
		{&os.LinkError{Op: "rename", Old: "a", New: "b", Err: syscall.EROFS}, "write x: read-only file system", true},
		{&fs.PathError{Op: "open", Path: "/v/x", Err: syscall.EACCES}, "write x: permission denied", true},
		{&os.SyscallError{Syscall: "fsync", Err: syscall.EIO}, "write x: input/output error", false},
	} {
		err := IO("write x", tc.cause)
		if !errors.Is(err, ErrIO) || !errors.Is(err, tc.cause) {
			t.Errorf("%v: class or cause lost", tc.cause)
		}
		if err.Error() != tc.msg {
			t.Errorf("message %q, want %q", err, tc.msg)
		}
		if (HintOf(err) != "") != tc.withHint {
			t.Errorf("%v: hint %q", tc.cause, HintOf(err))
		}
	}
	busy := New(ErrBusy, "vault busy")
	if err := IO("write x", busy); err != error(busy) {
		t.Fatalf("an already classified error was reclassified: %v", err)
	}
}

func TestWrap(t *testing.T) {
	disk := &fs.PathError{Op: "write", Path: "/v/x", Err: syscall.ENOSPC}
	if err := Wrap("git: write blob", disk); !errors.Is(err, ErrIO) || HintOf(err) == "" {
		t.Errorf("a full disk: %v, want ErrIO with a hint", err)
	}
	busy := New(ErrBusy, "git: index.lock is held")
	if err := Wrap("git: update the index", busy); err != busy {
		t.Errorf("a classified error: %v, want it as it is", err)
	}
	bad := errors.New("index: bad signature")
	err := Wrap("git: read the index", bad)
	var e *Error
	if errors.As(err, &e) || !errors.Is(err, bad) || err.Error() != "git: read the index: index: bad signature" {
		t.Errorf("a malformed file: %v, want it wrapped, unclassified", err)
	}
}
