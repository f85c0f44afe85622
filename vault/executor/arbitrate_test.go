package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/testvault"
)

func TestArbitrate(t *testing.T) {
	free := []Task{{ID: "a", Prompt: "x"}, {ID: "b", Prompt: "y"}}
	dep := []Task{{ID: "a", Prompt: "x"}, {ID: "b", Prompt: "y", After: []string{"a"}}}
	for _, c := range []struct {
		tasks []Task
		s     Signals
		mode  string
		why   string
	}{
		{dep, Signals{Busy: true, Load: 99, CPUs: 2}, ModeSequential, "task b waits for a"},
		{free, Signals{Busy: true, Load: 99, CPUs: 2}, ModeQueued, "held by another writer"},
		{free, Signals{Load: 2.5, CPUs: 2}, ModeStaggered, "load average 2.50 over 2 CPUs"},
		{free, Signals{Load: 2, CPUs: 2}, ModeConcurrent, "independent"},
		{free, Signals{Load: 0.5}, ModeConcurrent, "independent"},
		{nil, Signals{}, ModeConcurrent, "independent"},
	} {
		mode, why := Arbitrate(c.tasks, c.s)
		if mode != c.mode || !strings.Contains(why, c.why) {
			t.Errorf("Arbitrate(%v, %+v) = %s (%s), want %s (%s)", c.tasks, c.s, mode, why, c.mode, c.why)
		}
	}
}

func TestOrder(t *testing.T) {
	got, err := Order([]Task{{ID: "c", Prompt: "3", After: []string{"b"}}, {ID: "b", Prompt: "2", After: []string{"a"}}, {ID: "a", Prompt: "1"}, {Prompt: "4"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, t := range got {
		ids = append(ids, t.ID)
	}
	if strings.Join(ids, " ") != "a t4 b c" {
		t.Fatalf("order %v", ids)
	}
	for name, tasks := range map[string][]Task{
		"cycle":     {{ID: "a", Prompt: "1", After: []string{"b"}}, {ID: "b", Prompt: "2", After: []string{"a"}}},
		"self":      {{ID: "a", Prompt: "1", After: []string{"a"}}},
		"unknown":   {{ID: "a", Prompt: "1", After: []string{"z"}}},
		"duplicate": {{ID: "a", Prompt: "1"}, {ID: "a", Prompt: "2"}},
		"empty":     {{ID: "a", Prompt: " "}},
	} {
		if _, err := Order(tasks); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

// Dependencies run in order, each given what the tasks it follows found;
// a task whose dependency failed is not run, and says so.
func TestDelegateSequentialDependencies(t *testing.T) {
	v := testvault.New(t)
	opts := delegateOpts(fake("answer"))
	out := DelegateTasks(context.Background(), v, []Task{
		{ID: "b", Prompt: "compare", After: []string{"a"}},
		{ID: "a", Prompt: "read"},
	}, opts)
	if len(out) != 2 || out[0].ID != "a" || out[1].ID != "b" || out[0].Err != nil || out[1].Err != nil {
		t.Fatalf("%+v", out)
	}
	if !strings.Contains(out[1].Response.Summary, "- a: done: read") {
		t.Fatalf("b was not given a's finding: %q", out[1].Response.Summary)
	}
	var d delegationData
	if err := json.Unmarshal(out[1].Event.Data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Arbitration != ModeSequential || !strings.Contains(d.Why, "waits for a") || d.Task != "compare" || d.ID != "b" || len(d.After) != 1 {
		t.Fatalf("data %s", out[1].Event.Data)
	}

	crash := delegateOpts(fake("crash"))
	out = DelegateTasks(context.Background(), v, []Task{{ID: "a", Prompt: "read"}, {ID: "b", Prompt: "compare", After: []string{"a"}}}, crash)
	if CodeOf(out[1].Err) != CodeDependency || len(out[1].Attempts) != 0 || out[1].Event == nil || out[1].Event.Kind != KindDelegationFailed {
		t.Fatalf("the dependent of a failed task: %+v", out[1])
	}
}

// Queued: every result is written by one transaction at the end.
func TestDelegateQueuedWritesOnce(t *testing.T) {
	v := testvault.New(t)
	before := testvault.LastSubject(t, v)
	opts := delegateOpts(fake("answer"))
	opts.Mode, opts.Why = ModeQueued, "told to"
	out := DelegateTasks(context.Background(), v, []Task{{Prompt: "one"}, {Prompt: "two"}, {Prompt: "three"}}, opts)
	for _, o := range out {
		if o.Err != nil || o.Event == nil {
			t.Fatalf("%+v", o)
		}
	}
	if s := testvault.LastSubject(t, v); s == before || !strings.Contains(s, "3 delegations") {
		t.Fatalf("last commit %q: not one commit of the three", s)
	}
	if n := testvault.Kinds(t, v)[KindDelegation]; n != 3 {
		t.Fatalf("%d events", n)
	}
}

// Staggered: the starts are spaced, one wait fewer than tasks.
func TestDelegateStaggered(t *testing.T) {
	v := testvault.New(t)
	var waits []time.Duration
	opts := delegateOpts(fake("answer"))
	opts.Mode = ModeStaggered
	opts.Sleep = func(d time.Duration) { waits = append(waits, d) }
	DelegateTasks(context.Background(), v, []Task{{Prompt: "1"}, {Prompt: "2"}, {Prompt: "3"}}, opts)
	if len(waits) != 2 || waits[0] != StaggerDelay || waits[1] != StaggerDelay {
		t.Fatalf("waits %v", waits)
	}
}

// BenchmarkArbitrate: ordering and arbitrating 100 tasks, half of them
// waiting for the one before (the budget: well under 50 ms).
func BenchmarkArbitrate(b *testing.B) {
	tasks := make([]Task, 100)
	for i := range tasks {
		tasks[i] = Task{ID: fmt.Sprintf("t%03d", i), Prompt: "task"}
		if i%2 == 1 {
			tasks[i].After = []string{tasks[i-1].ID}
		}
	}
	for b.Loop() {
		ordered, err := Order(tasks)
		if err != nil {
			b.Fatal(err)
		}
		Arbitrate(ordered, CurrentSignals(false))
	}
}
