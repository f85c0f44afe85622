package vaulttest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The fake executor (fixtures/executor/fake, docs/EXECUTORS.md) as the
// tests of executors, summaries and the job worker use it.

// BuildFakeExecutor builds the fake executor as dir/fake and returns its
// path.
func BuildFakeExecutor(dir string) (string, error) {
	bin := filepath.Join(dir, "fake")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/memvault/memvault/fixtures/executor/fake").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building the fake executor: %v\n%s", err, out)
	}
	return bin, nil
}

// NotifySocket serves a unix socket for the fake's -notify until the test
// ends: each connection sends one line, answered with what handle returns
// (called concurrently). It returns the socket's path, in a short folder
// of its own: a socket's path is bounded.
func NotifySocket(t testing.TB, handle func(msg string) string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mvn")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); os.RemoveAll(dir) })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil {
					return
				}
				fmt.Fprintln(c, handle(strings.TrimSuffix(line, "\n")))
			}()
		}
	}()
	return sock
}
