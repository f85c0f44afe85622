package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/testvault"
	"github.com/memvault/memvault/vault/vaulttest"
)

func noSleep(time.Duration) {}

func delegateOpts(e Entry) Options {
	// concurrent, not auto: what auto chooses depends on the machine's load
	return Options{Executor: e, Mode: ModeConcurrent, Sleep: noSleep, Tx: vault.TxOptions{Command: "delegate"}}
}

// ledgerBytes is every ledger segment's bytes, joined.
func ledgerBytes(t *testing.T, v *vault.Vault) []byte {
	t.Helper()
	var all []byte
	err := filepath.WalkDir(filepath.Join(v.Root, "ledger"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		all = append(all, data...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func TestDelegateRecordsVerifiedResults(t *testing.T) {
	v := testvault.New(t)
	opts := delegateOpts(fake("answer"))
	opts.Executor.Name = "reader"
	opts.Thread = "project:shop"
	out := Delegate(context.Background(), v, []string{"read the parser", "read the lexer"}, opts)
	for i, o := range out {
		if o.Err != nil || o.Event == nil {
			t.Fatalf("task %d: %+v", i, o)
		}
		ev := o.Event
		if ev.Kind != KindDelegation || ev.Source != vault.SourceExecutor || ev.Thread != "project:shop" || ev.Text != "done: "+o.Task {
			t.Fatalf("task %d: event %+v", i, ev)
		}
		var d delegationData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Executor != "reader" || d.Task != o.Task || len(d.Attempts) != 1 || d.Tokens == nil || *d.Tokens != 42 || d.ChecksumBy != "executor" {
			t.Fatalf("task %d: data %s", i, ev.Data)
		}
		// what the ledger keeps still hashes to the checksum recorded
		if _, sum, err := Checksum(d.Result); err != nil || sum != d.Checksum {
			t.Fatalf("task %d: the recorded result does not hash to its checksum", i)
		}
	}
	if n := testvault.Kinds(t, v)[KindDelegation]; n != 2 {
		t.Fatalf("%d delegation events, want 2", n)
	}
	testvault.MustVerify(t, v)
}

// A crash is retried: two crashes, then an answer, make one event with
// three attempts.
func TestDelegateRetriesACrash(t *testing.T) {
	v := testvault.New(t)
	var mu sync.Mutex
	runs := 0
	sock := vaulttest.NotifySocket(t, func(string) string {
		mu.Lock()
		defer mu.Unlock()
		runs++
		if runs <= 2 {
			return "fail"
		}
		return "ok"
	})
	var waits []time.Duration
	opts := delegateOpts(fake("flaky", "-notify", sock))
	opts.Sleep = func(d time.Duration) { waits = append(waits, d) }
	out := Delegate(context.Background(), v, []string{"t"}, opts)
	o := out[0]
	if o.Err != nil || o.Event == nil || o.Event.Kind != KindDelegation {
		t.Fatalf("%+v", o)
	}
	if len(o.Attempts) != 3 || o.Attempts[0].Code != CodeCrash || o.Attempts[1].Code != CodeCrash || o.Attempts[2].Code != "" {
		t.Fatalf("attempts %+v", o.Attempts)
	}
	if len(waits) != 2 || waits[0] < 100*time.Millisecond || waits[1] < 200*time.Millisecond {
		t.Fatalf("backoff %v", waits)
	}
	if !strings.Contains(string(o.Event.Data), `"code":"crash"`) {
		t.Fatalf("the failed attempts are not recorded: %s", o.Event.Data)
	}
}

// Every failure code of the executor: tried as often as the taxonomy
// says, then recorded as a delegation.failed with every attempt.
func TestDelegateGivesUp(t *testing.T) {
	v := testvault.New(t)
	for _, c := range []struct {
		mode  string
		code  string
		tries int
	}{
		{"crash", CodeCrash, 3}, {"garbage", CodeMalformed, 3}, {"badsum", CodeChecksum, 3},
		{"error", CodeExecutor, 1}, {"huge", CodeTooLarge, 1}, {"diskfull", CodeDisk, 1}, {"hog", CodeMemoryLimit, 1},
	} {
		e := fake(c.mode, "-mb", "3072")
		e.MemoryLimit = 2560 << 20
		out := Delegate(context.Background(), v, []string{"task for " + c.mode}, delegateOpts(e))
		o := out[0]
		if CodeOf(o.Err) != c.code || len(o.Attempts) != c.tries || o.Event == nil || o.Event.Kind != KindDelegationFailed {
			t.Fatalf("%s: err %v, %d attempts, event %+v", c.mode, o.Err, len(o.Attempts), o.Event)
		}
		for _, a := range o.Attempts {
			if a.Code != c.code {
				t.Fatalf("%s: attempt %+v", c.mode, a)
			}
		}
	}
	testvault.MustVerify(t, v)
}

// A checksum mismatch never reaches the ledger: the failure is recorded,
// the result the executor sent is not.
func TestChecksumMismatchNeverReachesTheLedger(t *testing.T) {
	v := testvault.New(t)
	out := Delegate(context.Background(), v, []string{"t"}, delegateOpts(fake("badsum")))
	if CodeOf(out[0].Err) != CodeChecksum {
		t.Fatalf("%v", out[0].Err)
	}
	if bytes.Contains(ledgerBytes(t, v), []byte("tampered")) {
		t.Fatal("the mismatched result reached the ledger")
	}
	if testvault.Kinds(t, v)[KindDelegation] != 0 {
		t.Fatal("a delegation event was recorded for a mismatched result")
	}
}

// Never more executors alive at once than the bound allows, a weight
// taking as many slots as it says.
func TestDelegateConcurrencyBound(t *testing.T) {
	v := testvault.New(t)
	for _, c := range []struct{ bound, weight, want int }{{3, 1, 3}, {4, 2, 2}, {3, 5, 1}} {
		var mu sync.Mutex
		alive, most := 0, 0
		sock := vaulttest.NotifySocket(t, func(msg string) string {
			mu.Lock()
			defer mu.Unlock()
			switch msg {
			case "start":
				alive++
				most = max(most, alive)
			case "end":
				alive--
			}
			return ""
		})
		opts := delegateOpts(fake("count", "-notify", sock))
		opts.Concurrency, opts.Executor.Weight = c.bound, c.weight
		tasks := make([]string, 7)
		for i := range tasks {
			tasks[i] = "task"
		}
		for _, o := range Delegate(context.Background(), v, tasks, opts) {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
		}
		if most > c.want {
			t.Fatalf("bound %d, weight %d: %d executors alive at once, at most %d allowed", c.bound, c.weight, most, c.want)
		}
	}
}

// A vault whose lock does not come in time: the write is tried five times,
// then the outcome says lock_timeout and nothing was written.
func TestDelegateLockTimeout(t *testing.T) {
	v := testvault.New(t)
	release, err := v.Lock(vault.Lease{Command: "test"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	before := ledgerBytes(t, v)
	tries := 0
	opts := delegateOpts(fake("answer"))
	opts.Tx.LockTimeout = 10 * time.Millisecond
	opts.Sleep = func(time.Duration) { tries++ }
	o := Delegate(context.Background(), v, []string{"t"}, opts)[0]
	if CodeOf(o.Err) != CodeLockTimeout || o.Event != nil || o.Response == nil {
		t.Fatalf("%+v", o)
	}
	if tries != 4 {
		t.Fatalf("%d waits between tries of the write, want 4 (5 tries)", tries)
	}
	if !bytes.Equal(before, ledgerBytes(t, v)) {
		t.Fatal("the ledger changed")
	}
}

// A policy that keeps executors from writing delegations refuses the
// write at once (no retry) and records the violation.
func TestDelegateRefusedByPolicy(t *testing.T) {
	v := testvault.New(t)
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := tx.SetPolicy(map[string][]string{KindDelegation: {vault.SourceCLI}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	tries := 0
	opts := delegateOpts(fake("answer"))
	opts.Sleep = func(time.Duration) { tries++ }
	o := Delegate(context.Background(), v, []string{"t"}, opts)[0]
	if o.Event != nil || o.Err == nil || tries != 0 {
		t.Fatalf("%+v (%d retries)", o, tries)
	}
	if k := testvault.Kinds(t, v); k[KindDelegation] != 0 || k[vault.KindViolation] != 1 {
		t.Fatalf("kinds %v", k)
	}
}

// Several executors share the tasks, and each event names the one that
// answered. Run one at a time, none is ever loaded when a task starts:
// the round robin alone decides, alpha, beta, alpha.
func TestDelegateRoundRobin(t *testing.T) {
	v := testvault.New(t)
	a, b := fake("answer"), fake("plain")
	a.Name, b.Name = "alpha", "beta"
	opts := delegateOpts(Entry{})
	opts.Mode = ModeSequential
	opts.Executors = []Entry{a, b}
	out := Delegate(context.Background(), v, []string{"one", "two", "three"}, opts)
	var got []string
	for _, o := range out {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		var d delegationData
		if err := json.Unmarshal(o.Event.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Executor != o.Executor.Name || d.Mode != o.Executor.Mode {
			t.Fatalf("event names %s (%s), ran on %s", d.Executor, d.Mode, o.Executor.Name)
		}
		got = append(got, d.Executor)
	}
	if strings.Join(got, ",") != "alpha,beta,alpha" {
		t.Fatalf("shares %v", got)
	}
}

// choose: the capability first, then the slots, then the load, then the
// round robin from next.
func TestChoose(t *testing.T) {
	ex := func(name string, weight int, caps ...string) Entry {
		return Entry{Name: name, Weight: weight, Capabilities: caps}
	}
	a, b, c := ex("a", 1), ex("b", 1, "read", "summarise"), ex("c", 3, "read")
	for _, k := range []struct {
		name  string
		execs []Entry
		load  []int
		free  int
		need  string
		next  int
		want  int
	}{
		{"idle, round robin from 0", []Entry{a, b}, []int{0, 0}, 5, "", 0, 0},
		{"idle, round robin from 1", []Entry{a, b}, []int{0, 0}, 5, "", 1, 1},
		{"the least loaded, whatever next says", []Entry{a, b}, []int{2, 1}, 5, "", 0, 1},
		{"equal loads: next decides", []Entry{a, b, c}, []int{1, 1, 3}, 5, "", 1, 1},
		{"wrap around", []Entry{a, b, c}, []int{1, 2, 1}, 5, "", 2, 2},
		{"a capability only b and c have", []Entry{a, b, c}, []int{0, 1, 0}, 5, "read", 0, 2},
		{"the default capability", []Entry{a, b, c}, []int{0, 1, 0}, 5, DefaultCapability, 1, 0},
		{"c's weight does not fit", []Entry{a, b, c}, []int{1, 1, 0}, 2, "read", 0, 1},
		{"nothing fits", []Entry{a, b, c}, []int{1, 1, 0}, 0, "", 0, -1},
		{"nobody can", []Entry{a, b, c}, []int{0, 0, 0}, 5, "write", 0, -1},
		{"a weight over the bound counts as the bound", []Entry{ex("h", 12)}, []int{0}, 3, "", 0, 0},
	} {
		if got := choose(k.execs, k.load, k.free, 3, k.need, k.next); got != k.want {
			t.Errorf("%s: chose %d, want %d", k.name, got, k.want)
		}
	}
}

// A task naming a capability goes only to an executor that has it; one
// that no executor has is refused before anything runs, the vault as it
// was.
func TestDelegateByCapability(t *testing.T) {
	v := testvault.New(t)
	a, b := fake("answer"), fake("plain")
	a.Name, b.Name = "alpha", "beta"
	b.Capabilities = []string{"read", "summarise"}
	opts := delegateOpts(Entry{})
	opts.Executors = []Entry{a, b}
	tasks := []Task{{Prompt: "one", Capability: "read"}, {Prompt: "two", Capability: "read"}, {Prompt: "three"}, {Prompt: "four", Capability: "read"}}
	byTask := map[string]string{}
	for _, o := range DelegateTasks(context.Background(), v, tasks, opts) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		byTask[o.Task] = o.Executor.Name
	}
	for _, task := range []string{"one", "two", "four"} {
		if byTask[task] != "beta" {
			t.Errorf("task %s needs read and went to %s", task, byTask[task])
		}
	}
	before := ledgerBytes(t, v)
	for _, o := range [][]Entry{{a, b}, {a}} {
		opts.Executors = o
		out := DelegateTasks(context.Background(), v, []Task{{Prompt: "x"}, {Prompt: "y", Capability: "write"}}, opts)
		if len(out) != 1 || !errors.Is(out[0].Err, fault.ErrInvalid) || !strings.Contains(out[0].Err.Error(), "capability write") {
			t.Fatalf("a task no executor can do: %+v", out)
		}
	}
	opts.Executors, opts.Executor = nil, a
	if out := DelegateTasks(context.Background(), v, []Task{{Prompt: "y", Capability: "read"}}, opts); len(out) != 1 ||
		!strings.Contains(fmt.Sprint(out[0].Err), "executor alpha lacks") {
		t.Fatalf("a named executor without the capability: %+v", out)
	}
	if !bytes.Equal(before, ledgerBytes(t, v)) {
		t.Fatal("a refused delegation changed the ledger")
	}
}

// The least loaded executor gets the next task: while slow holds its
// tasks (each waits until the test lets it answer), every task that starts
// goes to quick, which answers at once. Round robin alone would give slow
// every other task.
func TestDelegateByLoad(t *testing.T) {
	v := testvault.New(t)
	const total = 8
	var mu sync.Mutex
	held, recorded := 0, 0
	release := make(chan struct{})
	check := func() { // under mu
		if held+recorded == total {
			select {
			case <-release:
			default:
				close(release)
			}
		}
	}
	sock := vaulttest.NotifySocket(t, func(msg string) string {
		mu.Lock()
		held++
		check()
		mu.Unlock()
		<-release
		return "ok"
	})
	slow, quick := fake("flaky", "-notify", sock), fake("answer")
	slow.Name, quick.Name = "slow", "quick"
	opts := delegateOpts(Entry{})
	opts.Concurrency = 3
	opts.Executors = []Entry{slow, quick}
	opts.OnRecorded = func(Outcome) {
		mu.Lock()
		recorded++
		check()
		mu.Unlock()
	}
	tasks := make([]string, total)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("task %d", i)
	}
	shares := map[string]int{}
	for _, o := range Delegate(context.Background(), v, tasks, opts) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		shares[o.Executor.Name]++
	}
	// The first task goes to slow (no load anywhere, the round robin
	// starts there); at most one more can reach it, when quick is as
	// loaded as slow at that moment. Then slow holds 2 of 3 slots and
	// quick is always the lighter one.
	if shares["slow"] < 1 || shares["slow"] > 2 || shares["slow"]+shares["quick"] != total {
		t.Fatalf("shares %v: the load did not decide", shares)
	}
}
