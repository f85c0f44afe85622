//go:build !linux

package executor

import (
	"errors"
	"runtime"
	"syscall"
)

// netIsolation is Linux's alone; NetIsolationAvailable refuses it first.
func netIsolation(*syscall.SysProcAttr) {}

// NetIsolationAvailable: network namespaces are Linux's.
func NetIsolationAvailable() error {
	return errors.New("network namespaces are Linux's; " + runtime.GOOS + " has none")
}
