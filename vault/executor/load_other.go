//go:build !linux

package executor

// loadAverage is 0 where memvault does not read it: arbitration then never
// staggers for load.
func loadAverage() float64 { return 0 }
