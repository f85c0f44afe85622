package vaulttest

import (
	"os"
	"testing"
	"time"
)

// EditFile replaces the bytes of the file at path, as a person editing it
// in place would, and sets its mtime a second past the one it had. The
// writers' check and the caches of the ledger know a file by its stamp
// (size, mtime, inode, ctime): an edit that keeps the size must move the
// mtime for them to read the file again. The kernel stamps a write with a
// coarse clock (a tick is a few milliseconds), so a write right after the
// one that was stamped may keep its mtime; the test sets it, rather than
// sleeping past a tick.
func EditFile(tb testing.TB, path string, data []byte) {
	tb.Helper()
	before, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, data, before.Mode().Perm()); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chtimes(path, time.Time{}, before.ModTime().Add(time.Second)); err != nil {
		tb.Fatal(err)
	}
}
