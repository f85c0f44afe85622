package executor

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestIsolatedExecutorUnprivileged runs TestIsolatedExecutorReachesNoListener
// as an unprivileged user (nobody, uid 65534, through util-linux's
// setpriv), the path where memvault adds a user namespace to the network
// namespace (CLONE_NEWUSER, the uid mapped to itself): the child must find
// isolation available (MEMVAULT_REQUIRE_NETNS: no skip), reach the host's
// listener without it and not with it. It needs root to drop to nobody,
// and setpriv; as a non-root user TestIsolatedExecutorReachesNoListener
// is this test already.
func TestIsolatedExecutorUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("not root: TestIsolatedExecutorReachesNoListener runs unprivileged already")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv (util-linux) to drop to an unprivileged user")
	}
	// A folder nobody can read, holding copies of this test binary and the
	// fake executor (go test's own folders are root's alone), and a
	// temporary folder nobody can write.
	dir, err := os.MkdirTemp("", "memvault-unpriv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	for _, d := range []string{dir, tmp} {
		os.MkdirAll(d, 0o755)
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(tmp, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	test, fakeCopy := filepath.Join(dir, "executor.test"), filepath.Join(dir, "fake")
	copyExec(t, self, test)
	copyExec(t, fakeBin, fakeCopy)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", test,
		"-test.run=^TestIsolatedExecutorReachesNoListener$", "-test.v", "-test.count=1")
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp, "HOME=" + tmp,
		"MEMVAULT_FAKE_EXECUTOR=" + fakeCopy, "MEMVAULT_REQUIRE_NETNS=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	for _, want := range []string{"uid 65534", "--- PASS: TestIsolatedExecutorReachesNoListener"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("as nobody, the output lacks %q:\n%s", want, out)
		}
	}
}

// copyExec copies the program at src to dst, executable by every user.
func copyExec(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
