package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

// Sessions starting at once each add themselves to the list; none may
// write back a list read before another's change.
func TestOpenSessionEditsDoNotLoseEachOther(t *testing.T) {
	v := newVault(t)
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := v.EditOpenSessions("opencode", 10*time.Second, func(open []Job) []Job {
				return append(open, Job{Kind: "summarize", Agent: "a", Session: fmt.Sprint(i)})
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var got []Job
	v.EditOpenSessions("opencode", time.Second, func(open []Job) []Job { got = open; return open })
	if len(got) != n {
		t.Fatalf("the list holds %d sessions, want %d", len(got), n)
	}
	if _, err := os.Stat(filepath.Join(v.Root, ".state", "hooks", "open-opencode.json")); err != nil {
		t.Fatalf("the list is not where older binaries look: %v", err)
	}
}

func TestOpenSessionsBusyChangesNothing(t *testing.T) {
	v := newVault(t)
	add := func(open []Job) []Job { return append(open, Job{Kind: "summarize", Agent: "a", Session: "s"}) }
	if err := v.EditOpenSessions("codex", time.Second, add); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(v.Root, ".state", "hooks", "open-codex.json")
	before, _ := os.ReadFile(path)
	held := flock.New(path + ".lock")
	if ok, err := held.TryLock(); !ok {
		t.Fatal(err)
	}
	defer held.Unlock()
	err := v.EditOpenSessions("codex", 30*time.Millisecond, func([]Job) []Job { return nil })
	if !IsBusy(err) {
		t.Fatalf("edit under a held lock: %v, want busy", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatalf("a busy edit changed the list: %s", after)
	}
	if err := v.EditOpenSessions("../x", time.Second, add); err == nil || strings.Contains(err.Error(), "busy") {
		t.Fatalf("a harness name with a path separator: %v", err)
	}
}
