package fileio

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// FlockHolder returns the pid of the process holding a flock on path, a
// file below root, from Linux's /proc/locks (whose pids are those of the
// reader's pid namespace), or 0 where that table does not say: another
// system, a holder in another pid namespace, a file system whose device
// numbers differ from stat's. It names a lock's holder without taking the
// lock, which status must not do: the vault lock's (holderOf), and those of
// the locks the features above the engine keep.
func FlockHolder(root, path string) int {
	info, err := At(root).Stat(path)
	if err != nil {
		return 0
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	// The device as the kernel prints it: major and minor in hex, from
	// st_dev's encoding (glibc's major() and minor()).
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, uint64(st.Ino))
	// The kernel makes the table a page per read(2), counting entries from
	// the start each time: a lock that goes between two reads shifts the
	// rest, and a line is skipped. A line present all along is missed by
	// one reading only under churn, so a miss is read again.
	for range 5 {
		if pid := flockHolderIn(want); pid != 0 {
			return pid
		}
	}
	return 0
}

// flockHolderIn reads /proc/locks once for the holder of the flock on the
// file whose "major:minor:inode" is want.
func flockHolderIn(want string) int {
	// Through a Root like every read, though the kernel's table is no
	// file of the vault's.
	data, err := At("/proc").ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		// "1: FLOCK  ADVISORY  WRITE 4120 fe:00:9980739 0 EOF"; a waiter's
		// line has "->" after the number.
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}
