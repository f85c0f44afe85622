package hookstate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

// Sessions starting at once each add themselves to the list; none may
// write back a list read before another's change.
func TestOpenSessionEditsDoNotLoseEachOther(t *testing.T) {
	v := testvault.New(t)
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := EditOpenSessions(v, "opencode", 10*time.Second, func(open []Job) []Job {
				return append(open, Job{Kind: "summarize", Agent: "a", Session: fmt.Sprint(i)})
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var got []Job
	EditOpenSessions(v, "opencode", time.Second, func(open []Job) []Job { got = open; return open })
	if len(got) != n {
		t.Fatalf("the list holds %d sessions, want %d", len(got), n)
	}
	if _, err := os.Stat(filepath.Join(v.Root, ".state", "hooks", "open-opencode.json")); err != nil {
		t.Fatalf("the list is not where older binaries look: %v", err)
	}
}

func TestOpenSessionsBusyChangesNothing(t *testing.T) {
	v := testvault.New(t)
	add := func(open []Job) []Job { return append(open, Job{Kind: "summarize", Agent: "a", Session: "s"}) }
	if err := EditOpenSessions(v, "codex", time.Second, add); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(v.Root, ".state", "hooks", "open-codex.json")
	before, _ := os.ReadFile(path)
	held := flock.New(path + ".lock")
	if ok, err := held.TryLock(); !ok {
		t.Fatal(err)
	}
	defer held.Unlock()
	err := EditOpenSessions(v, "codex", 30*time.Millisecond, func([]Job) []Job { return nil })
	if !vault.IsBusy(err) {
		t.Fatalf("edit under a held lock: %v, want busy", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatalf("a busy edit changed the list: %s", after)
	}
	if err := EditOpenSessions(v, "../x", time.Second, add); err == nil || strings.Contains(err.Error(), "busy") {
		t.Fatalf("a harness name with a path separator: %v", err)
	}
}
