package executor

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
)

// TestIsolatedExecutorReachesNoListener: the fake executor, told to
// connect to a listener on the host's 127.0.0.1, reaches it when not
// isolated and cannot when run with isolate = net (its own network
// namespace, whose loopback is down). Only loopback addresses are used.
func TestIsolatedExecutorReachesNoListener(t *testing.T) {
	t.Logf("uid %d", os.Getuid())
	if err := NetIsolationAvailable(); err != nil {
		if os.Getenv("MEMVAULT_REQUIRE_NETNS") != "" {
			t.Fatalf("no network namespace for uid %d: %v", os.Getuid(), err)
		}
		if runtime.GOOS == "linux" {
			t.Skipf("this machine gives no network namespace: %v", err)
		}
		if err := CheckIsolation("x", IsolateNet); !errors.Is(err, vault.ErrInvalid) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("isolate net where the platform has none: %v; want one line, ErrInvalid", err)
		}
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	run := func(isolate string) string {
		e := fake("dial", "-addr", addr)
		e.Isolate = isolate
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := Runner{}.Run(ctx, e, Request{Type: TypeTask, Prompt: "dial", Cwd: t.TempDir()}, 0)
		if err != nil {
			t.Fatalf("isolate %q: %v", isolate, err)
		}
		return resp.Summary
	}
	if got := run(""); got != "reached "+addr+": hello from the host" {
		t.Errorf("not isolated: %q; want the host's listener reached", got)
	}
	if got := run(IsolateNet); !strings.HasPrefix(got, "unreachable "+addr+": ") {
		t.Errorf("isolated: %q; want the host's listener unreachable", got)
	}
	// and the ping goes through the same namespace: an isolated executor
	// still answers it
	e := fake("answer")
	e.Isolate = IsolateNet
	if _, err := (Runner{}).Ping(context.Background(), e, t.TempDir()); err != nil {
		t.Errorf("an isolated executor's ping: %v", err)
	}
}

// TestIsolateValues: only net is an isolation; a table written by hand
// with another is refused in one line.
func TestIsolateValues(t *testing.T) {
	if err := CheckIsolation("x", "disk"); !errors.Is(err, vault.ErrInvalid) || err.Error() != `executor x: isolate "disk": want net` {
		t.Errorf("isolate disk: %v", err)
	}
	data := []byte("[executors.x]\ncommand = \"sh\"\nisolate = \"all\"\n")
	if _, err := Parse(data); err == nil || !strings.Contains(err.Error(), `isolate "all": want net`) {
		t.Errorf("a table with isolate = all: %v", err)
	}
}
