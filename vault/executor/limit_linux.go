package executor

import "golang.org/x/sys/unix"

// limitMemory bounds the address space of the process pid (RLIMIT_AS,
// soft and hard) to n bytes.
func limitMemory(pid int, n int64) error {
	lim := unix.Rlimit{Cur: uint64(n), Max: uint64(n)}
	return unix.Prlimit(pid, unix.RLIMIT_AS, &lim, nil)
}
