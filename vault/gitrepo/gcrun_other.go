//go:build !linux

package gitrepo

import (
	"io/fs"
	"syscall"
	"time"
)

// gcLocksKnowable: without /proc memvault cannot tell a killed gc's lock
// files from a live git's, and leaves them to a person (the error names
// the file).
const gcLocksKnowable = false

func procStart(int) string { return "" }

func procAlive(pid int, _ string) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

func gitHasOpen(string) bool { return true }

func changeTime(info fs.FileInfo) time.Time { return info.ModTime() }
