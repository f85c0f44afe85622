//go:build !linux

package fileio

// Leases and renameat2 are Linux's: elsewhere ReplaceIfSame checks and
// renames (replaceRenamed).

func replaceLeased(path string, data, was []byte) error { return errUnsupported }

func replaceExchanged(path string, data, was []byte) error { return errUnsupported }

func confirmSame(path string, was []byte) error { return sameAsRead(path, was) }
