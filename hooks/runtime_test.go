package hooks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/memvault/memvault/hooks/hookstate"
	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/transcript"
)

// Sessions starting at once each add themselves to the open list; none may
// write back a list read before another's change.
func TestOpenListEditsDoNotLoseEachOther(t *testing.T) {
	v, _, err := vault.Init(filepath.Join(t.TempDir(), vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	h := &Harness{Name: "opencode"}
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &Runner{V: v, Harness: h, Agent: "default"}
			r.editOpenList(func(open []hookstate.Job) []hookstate.Job {
				return append(open, hookstate.Job{Kind: "summarize", Agent: "default", Session: fmt.Sprint(i)})
			})
		}()
	}
	wg.Wait()
	data, err := os.ReadFile(filepath.Join(v.Root, ".state", "hooks", "open-opencode.json"))
	if err != nil {
		t.Fatal(err)
	}
	var open []hookstate.Job
	if err := json.Unmarshal(data, &open); err != nil {
		t.Fatal(err)
	}
	if len(open) != n {
		t.Fatalf("the list holds %d sessions, want %d: %s", len(open), n, data)
	}
	r := &Runner{V: v, Harness: h, Agent: "default"}
	r.sessionEnded(transcript.Ref{Agent: "default", Session: "3"})
	data, _ = os.ReadFile(filepath.Join(v.Root, ".state", "hooks", "open-opencode.json"))
	open = nil
	json.Unmarshal(data, &open)
	if len(open) != n-1 {
		t.Fatalf("after session 3 ended the list holds %d sessions, want %d", len(open), n-1)
	}
}
