package heads

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/testvault"
)

func rememberIn(t *testing.T, v *vault.Vault, kind, thread, session, text string) {
	t.Helper()
	_, err := v.Update(vault.TxOptions{Session: session}, func(tx *vault.Tx) error {
		_, err := memory.Remember(tx, memory.Input{Kind: kind, Thread: thread, Text: text})
		return err
	})
	if err != nil {
		t.Fatalf("remember %q: %v", text, err)
	}
}

func refresh(t *testing.T, v *vault.Vault, session string) *RefreshReport {
	t.Helper()
	rep, err := Refresh(v, RefreshOptions{TxOptions: vault.TxOptions{Session: session}, Trigger: "session-end", Memory: true, Affected: true})
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	return rep
}

func status(rep *RefreshReport, head string) string {
	for _, h := range rep.Heads {
		if h.Head == head {
			return h.Status
		}
	}
	return ""
}

func readHead(t *testing.T, v *vault.Vault, head string) string {
	t.Helper()
	data, err := os.ReadFile(v.Abs(vault.MustRel(head)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A person saves MEMORY.md while a refresh is merging: the refresh merges
// again with what they saved, so their edit survives and the refresh lands.
func TestEditDuringRefreshSurvives(t *testing.T) {
	v := testvault.New(t)
	rememberIn(t, v, "decision", "project:shop", "s1", "use WAL")
	refresh(t, v, "s1")
	rememberIn(t, v, "next", "project:shop", "s2", "write the tests")

	saved := false
	save := func(head string) {
		if head != vault.MemoryHead || saved {
			return
		}
		saved = true
		p := v.Abs(vault.MustRel(vault.MemoryHead))
		data, _ := os.ReadFile(p)
		data = bytes.Replace(data, []byte("## Blockers\n"), []byte("## Blockers\n\n- saved by a person mid-refresh\n"), 1)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Error(err)
		}
	}
	rep, err := Refresh(v, RefreshOptions{TxOptions: vault.TxOptions{Session: "s2"}, Trigger: "session-end", Memory: true, Affected: true, merged: save})
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if got := status(rep, vault.MemoryHead); got != "merged" {
		t.Fatalf("status %q, want merged", got)
	}
	s := readHead(t, v, vault.MemoryHead)
	if !strings.Contains(s, "saved by a person mid-refresh") || !strings.Contains(s, "write the tests") {
		t.Fatalf("lost the edit or the refresh:\n%s", s)
	}
	// Both are in the commit the refresh made.
	tree, err := v.Repo.TreeAt("")
	if err != nil {
		t.Fatal(err)
	}
	f, err := tree.File(vault.MemoryHead)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := f.Contents()
	if c != s {
		t.Fatal("the committed MEMORY.md differs from the file")
	}
}

// Two refreshes race for MEMORY.md: one renders, the other is deferred;
// the next refresh retries it, and nothing is lost.
func TestTwoRefreshesRace(t *testing.T) {
	v := testvault.New(t)
	rememberIn(t, v, "fact", "", "a", "first fact")

	entered := make(chan struct{})
	proceed := make(chan struct{})
	var first32 atomic.Bool
	hold := func(heads []string) {
		if first32.CompareAndSwap(false, true) {
			close(entered)
			<-proceed
		}
	}

	var wg sync.WaitGroup
	var first *RefreshReport
	var firstErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		first, firstErr = Refresh(v, RefreshOptions{TxOptions: vault.TxOptions{Session: "a"}, Trigger: "session-end", Memory: true, leased: hold})
	}()
	<-entered
	// A holds the lease; B, another session, writes and refreshes.
	rememberIn(t, v, "fact", "", "b", "second fact")
	second, err := Refresh(v, RefreshOptions{TxOptions: vault.TxOptions{Session: "b"}, Trigger: "session-end", Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	close(proceed)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	if status(second, vault.MemoryHead) != "deferred" || status(first, vault.MemoryHead) != "rendered" {
		t.Fatalf("first %q, second %q", status(first, vault.MemoryHead), status(second, vault.MemoryHead))
	}
	st, _, _ := FoldedState(v)
	hs := BuildView(st, HeadsConfig{}).Heads[vault.MemoryHead]
	// What status and resolve read through the prepared view is the
	// full fold's bookkeeping, the deferred refresh included.
	if got, want := HeadStatesOf(v, st), HeadStates(st); !reflect.DeepEqual(got, want) {
		t.Fatalf("HeadStatesOf = %+v\nthe full fold's = %+v", got, want)
	}
	if len(hs.Deferred) != 1 && !strings.Contains(readHead(t, v, vault.MemoryHead), "second fact") {
		t.Fatalf("the deferred refresh is neither pending nor covered")
	}
	// The next event, of any session, retries it.
	rep, err := RunDeferred(v, vault.TxOptions{Session: "c"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs.Deferred) == 1 && status(rep, vault.MemoryHead) == "" {
		t.Fatal("RunDeferred did not retry MEMORY.md")
	}
	if s := readHead(t, v, vault.MemoryHead); !strings.Contains(s, "first fact") || !strings.Contains(s, "second fact") {
		t.Fatalf("a fact is missing:\n%s", s)
	}
	st, _, _ = FoldedState(v)
	if n := len(BuildView(st, HeadsConfig{}).Heads[vault.MemoryHead].Deferred); n != 0 {
		t.Fatalf("%d deferred refreshes still pending", n)
	}
	// Nothing pending: RunDeferred does nothing at all.
	rep, err = RunDeferred(v, vault.TxOptions{}, nil)
	if err != nil || len(rep.Heads) != 0 || rep.Commit != "" {
		t.Fatalf("idle RunDeferred: %+v, %v", rep, err)
	}
	testvault.MustVerify(t, v)
}

// Replay: at every commit that rendered a head, rendering the ledger of
// that commit reproduces the committed head byte for byte.
func TestReplayEveryCommit(t *testing.T) {
	v := testvault.New(t)
	steps := []func(){
		func() { rememberIn(t, v, "constraint", "", "s1", "never force-push") },
		func() { rememberIn(t, v, "decision", "project:shop", "s1", "use WAL") },
		func() { refresh(t, v, "s1") },
		func() { rememberIn(t, v, "blocker", "project:shop", "s2", "no keys") },
		func() { rememberIn(t, v, "fact", "person:alice", "s2", "mornings") },
		func() { refresh(t, v, "s2") },
		func() { rememberIn(t, v, "next", "", "s3", "call Bob") },
		func() { refresh(t, v, "s3") },
	}
	for _, s := range steps {
		s()
	}
	checked := 0
	err := v.Log(func(ci gitrepo.CommitInfo) bool {
		tree, err := v.Repo.TreeAt(ci.Hash)
		if err != nil {
			t.Fatal(err)
		}
		for _, head := range []string{vault.MemoryHead, "threads/project/shop.md", "threads/person/alice.md"} {
			// Only the commits that rendered this head: later commits add
			// rows the committed head does not show yet.
			if !strings.HasPrefix(ci.Subject, "refresh: ") || !strings.Contains(ci.Subject, head+" rendered") {
				continue
			}
			f, err := tree.File(".rendered/" + head)
			if err != nil {
				t.Fatalf("%s rendered at %s but no .rendered copy", head, vault.ShortHash(ci.Hash))
			}
			want, _ := f.Contents()
			at := RenderOptions{At: ci.Hash}
			if head == vault.MemoryHead {
				at.Memory = true
			} else {
				th, _ := TargetOf(head)
				tt, _ := vault.ParseThread(th.Thread)
				at.Threads = []vault.Thread{tt}
			}
			docs, err := RenderHeads(v, at)
			if err != nil {
				t.Fatalf("render at %s: %v", vault.ShortHash(ci.Hash), err)
			}
			if string(docs[0].Bytes) != want {
				t.Errorf("%s at %s: the replay differs from the committed render", head, vault.ShortHash(ci.Hash))
			}
			// No hand edits: the head file is the render.
			if hf, err := tree.File(head); err == nil {
				got, _ := hf.Contents()
				if got != want {
					t.Errorf("%s at %s: the head differs from the render without hand edits", head, vault.ShortHash(ci.Hash))
				}
			}
			checked++
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 5 {
		t.Fatalf("checked only %d renders", checked)
	}
}

// The derived state gives the same rows as a fold of the whole ledger,
// cold, warm, after appends, and after corrections.
func TestHeadStateCacheMatchesFullFold(t *testing.T) {
	v := testvault.New(t)
	check := func(when string) {
		t.Helper()
		st, tip, err := FoldedState(v)
		if err != nil {
			t.Fatal(err)
		}
		segs, _, _ := vault.ListSegments(v.Root)
		full, fullTip, _, err := v.FoldAll(segs)
		if err != nil {
			t.Fatal(err)
		}
		if tip != fullTip {
			t.Fatalf("%s: tip %s, want %s", when, tip, fullTip)
		}
		cfg := HeadsConfig{MemoryTokens: 1000, ThreadTokens: 2000}
		a, b := BuildView(st, cfg).input, BuildView(full, cfg).input
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: cached view differs from the full fold", when)
		}
	}
	check("empty")
	var ids []string
	for i := 0; i < 20; i++ {
		_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
			ev, err := memory.Remember(tx, memory.Input{Kind: "fact", Thread: "project:x", Text: fmt.Sprintf("fact %d", i)})
			ids = append(ids, ev.ID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			check(fmt.Sprintf("after %d", i))
		}
	}
	check("warm")
	check("warm again")
	_, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		if _, err := memory.Retract(tx, ids[3], "wrong"); err != nil {
			return err
		}
		_, err := memory.Supersede(tx, ids[4], "fact four, corrected")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	check("after corrections")
	os.Remove(StateView.Path(v.Root))
	check("after deleting the cache")
	os.WriteFile(StateView.Path(v.Root), []byte("garbage"), 0o600)
	check("after garbage in the cache")
}

func TestLeaseTakeoverAndRelease(t *testing.T) {
	v := testvault.New(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v.Clock = func() time.Time { return now }
	head := vault.MustRel(vault.MemoryHead)
	a, holder, took, err := AcquireHeadLease(v, head, LeaseOwner{Agent: "x", Session: "a"}, time.Minute)
	if err != nil || holder != nil || took != nil || a == nil {
		t.Fatalf("first acquire: %v %v %v %v", a, holder, took, err)
	}
	_, holder, _, _ = AcquireHeadLease(v, head, LeaseOwner{Agent: "x", Session: "b"}, time.Minute)
	if holder == nil || holder.Token != a.Token {
		t.Fatal("a live lease was not refused")
	}
	now = now.Add(2 * time.Minute)
	b, holder, took, _ := AcquireHeadLease(v, head, LeaseOwner{Agent: "x", Session: "b"}, time.Minute)
	if b == nil || holder != nil || took == nil || !strings.Contains(took.Reason, "expired") {
		t.Fatalf("expired lease not taken over: %v %v %v", b, holder, took)
	}
	// A cannot renew or release what B took.
	if err := renewHeadLease(v, a, time.Minute); err == nil {
		t.Fatal("renewed a lease taken over")
	}
	_ = ReleaseHeadLease(v, a)
	if _, holder, _, _ := AcquireHeadLease(v, head, LeaseOwner{Agent: "x", Session: "c"}, time.Minute); holder == nil {
		t.Fatal("releasing a stale lease freed the new holder's")
	}
	_ = ReleaseHeadLease(v, b)
	if c, _, _, _ := AcquireHeadLease(v, head, LeaseOwner{Agent: "x", Session: "c"}, time.Minute); c == nil {
		t.Fatal("released lease not free")
	}
}
