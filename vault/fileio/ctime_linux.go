package fileio

import "syscall"

// Ctime is a file's inode change time in nanoseconds, from its stat.
func Ctime(sys *syscall.Stat_t) int64 { return sys.Ctim.Nano() }
