package executor

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// Run modes of a delegation (docs/EXECUTORS.md, "Arbitration").
const (
	ModeAuto       = "auto"
	ModeSequential = "sequential" // one at a time, dependencies first
	ModeConcurrent = "concurrent" // up to the bound at once
	ModeStaggered  = "staggered"  // up to the bound, starts spaced by StaggerDelay
	ModeQueued     = "queued"     // up to the bound; the results written together at the end
)

// RunModes lists the modes --mode takes, auto first.
var RunModes = []string{ModeAuto, ModeSequential, ModeConcurrent, ModeStaggered, ModeQueued}

// Task is one task of a delegation: its prompt, the ids of the tasks
// whose results it waits for, the capability an executor needs to be
// given it ("" for any), and its scope: the folder it runs in (relative to
// the delegation's, Options.Dir, when not absolute; that one when "") and
// the thread its event is filed under (Options.Thread when "").
type Task struct {
	ID         string   `json:"id,omitempty"`
	Prompt     string   `json:"task"`
	After      []string `json:"after,omitempty"`
	Capability string   `json:"capability,omitempty"`
	Scope      string   `json:"scope,omitempty"`
	Thread     string   `json:"thread,omitempty"`
}

// Signals are what arbitration looks at besides the tasks.
type Signals struct {
	Busy bool    // the vault lock was held by another writer
	Load float64 // the one-minute load average
	CPUs int
}

// Arbitrate chooses the run mode of tasks, and says why: dependencies →
// sequential; the vault busy → queued; a loaded machine (the load average
// over the CPUs) → staggered; otherwise concurrent. It reads nothing: a
// pure function of its arguments.
func Arbitrate(tasks []Task, s Signals) (mode, why string) {
	for _, t := range tasks {
		if len(t.After) > 0 {
			return ModeSequential, fmt.Sprintf("task %s waits for %s", t.ID, strings.Join(t.After, ", "))
		}
	}
	if s.Busy {
		return ModeQueued, "the vault lock is held by another writer"
	}
	if cpus := max(s.CPUs, 1); s.Load > float64(cpus) {
		return ModeStaggered, fmt.Sprintf("load average %.2f over %d CPUs", s.Load, cpus)
	}
	return ModeConcurrent, "independent tasks on an idle vault"
}

// CurrentSignals are the machine's signals now (busy is the caller's).
func CurrentSignals(busy bool) Signals {
	return Signals{Busy: busy, Load: loadAverage(), CPUs: runtime.NumCPU()}
}

// Order checks tasks' ids and dependencies and returns them in an order in
// which every task comes after those it waits for (the given order, as far
// as the dependencies allow). Tasks without an id are numbered t1, t2, ….
func Order(tasks []Task) ([]Task, error) {
	ids := map[string]int{}
	out := slices.Clone(tasks)
	for i := range out {
		if out[i].ID == "" {
			out[i].ID = fmt.Sprintf("t%d", i+1)
		}
		if _, dup := ids[out[i].ID]; dup {
			return nil, fault.New(fault.ErrInvalid, "delegate: task id %q given twice", out[i].ID)
		}
		if strings.TrimSpace(out[i].Prompt) == "" {
			return nil, fault.New(fault.ErrInvalid, "delegate: task %s: empty", out[i].ID)
		}
		if c := out[i].Capability; c != "" {
			if err := CheckCapability(c); err != nil {
				return nil, fault.New(fault.ErrInvalid, "delegate: task %s: %v", out[i].ID, err)
			}
		}
		if th := out[i].Thread; th != "" {
			parsed, err := vault.ParseThread(th)
			if err != nil {
				return nil, fault.New(fault.ErrInvalid, "delegate: task %s: %v", out[i].ID, err)
			}
			out[i].Thread = parsed.String()
		}
		ids[out[i].ID] = i
	}
	for _, t := range out {
		for _, d := range t.After {
			if _, ok := ids[d]; !ok {
				return nil, fault.New(fault.ErrInvalid, "delegate: task %s waits for %q, which is not a task", t.ID, d)
			}
		}
	}
	var sorted []Task
	done := map[string]bool{}
	for len(sorted) < len(out) {
		progress := false
		for _, t := range out {
			if done[t.ID] || slices.ContainsFunc(t.After, func(d string) bool { return !done[d] }) {
				continue
			}
			done[t.ID] = true
			sorted = append(sorted, t)
			progress = true
		}
		if !progress {
			var left []string
			for _, t := range out {
				if !done[t.ID] {
					left = append(left, t.ID)
				}
			}
			return nil, fault.New(fault.ErrInvalid, "delegate: the tasks %s wait for each other in a cycle", strings.Join(left, ", "))
		}
	}
	return sorted, nil
}
