package executor

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/testvault"
)

// The overhead of a delegation over running the executor directly: the
// fake executor run by os/exec with its request on stdin (the floor), by
// the runner (environment, process group, bounded output, envelope and
// checksum verified), and by Delegate (the runner, and the event recorded
// and committed). docs/EXECUTORS.md, "Cost", keeps the figures.

func BenchmarkExecDirect(b *testing.B) {
	for b.Loop() {
		cmd := exec.Command(fakeBin, "-mode", "answer")
		cmd.Stdin = strings.NewReader(`{"protocol":1,"type":"task","prompt":"read"}`)
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunner(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		if _, err := (Runner{}).Run(context.Background(), fake("answer"), Request{Type: TypeTask, Prompt: "read", Cwd: dir}, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDelegate(b *testing.B) {
	v := testvault.New(b)
	opts := delegateOpts(fake("answer"))
	for b.Loop() {
		if out := Delegate(context.Background(), v, []string{"read"}, opts); out[0].Err != nil {
			b.Fatal(out[0].Err)
		}
	}
}
