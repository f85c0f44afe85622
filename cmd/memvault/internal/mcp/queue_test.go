package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memvault/memvault/vault/testvault"
)

// TestParallelWritesQueue: 65 writes sent at once on one server, of every
// kind of transaction, all succeed: the server queues its own writes and
// never answers busy against itself, however long the queue is next to
// --lock-wait (here 250 ms, which 65 writes in a row far outlast). Every
// row is in the ledger once, and the vault verifies (issue 33).
func TestParallelWritesQueue(t *testing.T) {
	t.Parallel()
	f := setup(t, Options{LockWait: 250 * time.Millisecond}, "")
	const calls = 65
	var wg sync.WaitGroup
	failed := make(chan string, calls)
	for i := range calls {
		name, args := "remember", map[string]any{"text": fmt.Sprintf("parallel fact %d", i)}
		switch i % 4 {
		case 1:
			name, args = "commitment_open", map[string]any{"text": fmt.Sprintf("parallel promise %d", i)}
		case 2:
			name, args = "decide", map[string]any{"decision": fmt.Sprintf("parallel decision %d", i), "rationale": "r"}
		case 3:
			name, args = "next", map[string]any{"text": fmt.Sprintf("parallel next %d", i)}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := f.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
			switch {
			case err != nil:
				failed <- fmt.Sprintf("%s %d: protocol error %v", name, i, err)
			case res.IsError:
				failed <- fmt.Sprintf("%s %d: %s", name, i, text(res))
			}
		}()
	}
	wg.Wait()
	close(failed)
	n := 0
	for msg := range failed {
		if n++; n <= 3 {
			t.Error(msg)
		}
	}
	if n > 0 {
		t.Fatalf("%d of %d parallel writes failed", n, calls)
	}
	texts := map[string]int{}
	for _, r := range f.state().Rows {
		text, _, _ := strings.Cut(r.Text, " (because") // a decision's text holds its rationale
		texts[text]++
	}
	for i := range calls {
		want := []string{"parallel fact %d", "parallel promise %d", "parallel decision %d", "parallel next %d"}[i%4]
		if got := texts[fmt.Sprintf(want, i)]; got != 1 {
			t.Errorf("%q is in the ledger %d times", fmt.Sprintf(want, i), got)
		}
	}
	testvault.MustVerify(t, f.v)
}
