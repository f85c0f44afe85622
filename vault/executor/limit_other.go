//go:build !linux

package executor

import "errors"

// limitMemory: another process's limits can be set on Linux only (prlimit).
func limitMemory(pid int, n int64) error {
	return errors.New("memory_limit is enforced on Linux only")
}
