package index

import (
	"syscall"
	"time"
)

// changeTime is a file's inode change time, which git's index records.
func changeTime(sys *syscall.Stat_t) time.Time {
	return time.Unix(int64(sys.Ctim.Sec), int64(sys.Ctim.Nsec))
}
