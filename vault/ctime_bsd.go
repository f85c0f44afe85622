//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package vault

import "syscall"

// ctimeOf is a file's inode change time in nanoseconds (verifiedStamp).
func ctimeOf(sys *syscall.Stat_t) int64 { return sys.Ctimespec.Nano() }
