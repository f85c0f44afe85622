package executor

import "syscall"

// loadAverage is the one-minute load average; 0 when it cannot be read.
func loadAverage() float64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return float64(si.Loads[0]) / (1 << 16)
}
