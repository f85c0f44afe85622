//go:build !linux

package fileio

import "golang.org/x/sys/unix"

// isTerminal reports whether fd is a terminal.
func isTerminal(fd uintptr) bool {
	_, err := unix.IoctlGetTermios(int(fd), unix.TIOCGETA)
	return err == nil
}

// IsTerminal reports whether fd is a terminal a person types into: a
// terminal's ioctl answers, which /dev/null's (a character device too)
// does not.
func IsTerminal(fd uintptr) bool { return isTerminal(fd) }
