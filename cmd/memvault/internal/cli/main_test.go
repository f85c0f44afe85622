package cli

import (
	"os"
	"testing"
)

// TestMain runs the commands in-process, where memvault's own path is
// this test binary: no detached worker is started after their writes
// (MEMVAULT_REFRESH, afterwrite.go); the tests of the refresh after a
// write set it themselves.
func TestMain(m *testing.M) {
	if os.Getenv(refreshEnv) == "" {
		os.Setenv(refreshEnv, "off")
	}
	os.Exit(m.Run())
}
