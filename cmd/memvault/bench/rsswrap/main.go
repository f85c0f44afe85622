// Command rsswrap runs a command and reports its wall time and peak
// resident memory on file descriptor 3, as "NANOSECONDS MAXRSS_KIB EXIT".
//
// The suite cannot read a child's peak memory directly: Go starts children
// with vfork, and Linux carries the parent's high-water RSS into the
// child's ru_maxrss at exec, so every child of a large test process would
// report at least the test process's size. rsswrap is small, so the floor
// it adds is its own few MiB.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rsswrap CMD [ARG]… (reports on fd 3)")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	code := 0
	if err != nil {
		code = 127
		if e, ok := err.(*exec.ExitError); ok {
			code = e.ExitCode()
		}
	}
	var rss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = int64(ru.Maxrss)
		}
	}
	report := os.NewFile(3, "report")
	fmt.Fprintf(report, "%d %d %d\n", wall.Nanoseconds(), rss, code)
	os.Exit(code)
}
