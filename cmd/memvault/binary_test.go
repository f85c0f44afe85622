package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Which memvault a test starts.
//
// testscript.Main puts this test binary on PATH as memvault, so under
// -race every process a test starts is race-built: the race runtime and
// package init run instrumented, and each start costs several times a
// plain build's. The scripts and the other tests of behaviour start some
// 1,500 of them, one command at a time, and were most of the race
// suite's CPU (docs/PERFORMANCE.md, row 19). A race needs goroutines or
// processes that meet, so:
//
//   - racingMemvault is for the tests whose point is processes at once:
//     concurrent writers, the torture, busy hooks and the spool, hand edits
//     racing renders, the web server. It is always this test binary, so
//     under -race the race detector watches every such child.
//   - plainMemvault is for the tests of behaviour (the scripts, modes,
//     security, merges and sync): under -race it is a plain build of
//     cmd/memvault, made once per test process; otherwise this test binary.
//
// MEMVAULT_RACE_CHILDREN=1 makes plainMemvault race-built too, and .ci/run
// runs cmd/memvault's tests that way in a step of its own, so CI still
// runs every child under the race detector. With coverage on the test
// binary is used, since a separate build would not be counted.

// racingMemvault returns the race-built (under -race) test binary that
// testscript put on PATH.
func racingMemvault(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("memvault")
	if err != nil {
		t.Fatalf("the memvault copy testscript puts on PATH: %v", err)
	}
	return bin
}

// plainMemvault returns the memvault binary for tests of behaviour.
func plainMemvault(t testing.TB) string {
	t.Helper()
	if !childrenPlain() {
		return racingMemvault(t)
	}
	plainBuild.once.Do(buildPlain)
	if plainBuild.err != nil {
		t.Fatalf("build memvault for the tests of behaviour: %v", plainBuild.err)
	}
	return plainBuild.bin
}

// childrenPlain reports whether plainMemvault is a build of its own.
func childrenPlain() bool {
	return raceEnabled && testing.CoverMode() == "" && os.Getenv("MEMVAULT_RACE_CHILDREN") != "1"
}

// plainBuild is the one plain build of a test process, removed when the
// tests end (plainCleanup, from TestMain).
var plainBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

func buildPlain() {
	dir, err := os.MkdirTemp("", "memvault-plain-")
	if err != nil {
		plainBuild.err = err
		return
	}
	plainBuild.dir = dir
	bin := filepath.Join(dir, "memvault")
	// Built as the README builds it (static, with its build tag), which
	// TestDemo's build shares in Go's build cache.
	cmd := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", bin, "github.com/memvault/memvault/cmd/memvault")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		plainBuild.err = &buildError{err: err, out: string(out)}
		return
	}
	plainBuild.bin = bin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

// cleanupM runs the tests, then removes the plain build.
type cleanupM struct{ m *testing.M }

func (c cleanupM) Run() int {
	code := c.m.Run()
	if plainBuild.dir != "" {
		os.RemoveAll(plainBuild.dir)
	}
	return code
}

// childIsRaceBuilt reports whether bin is race-built: memory bounds hold
// only for a plain build (the race runtime multiplies a process's memory).
func childIsRaceBuilt(bin string) bool {
	return raceEnabled && !(childrenPlain() && bin == plainBuild.bin)
}
