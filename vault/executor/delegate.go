package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// Kinds of the events a delegation records (the engine's vocabulary).
const (
	KindDelegation       = vault.KindDelegation
	KindDelegationFailed = vault.KindDelegationFailed
)

// textChars bounds an event's text: the summary's start (the whole result
// is in data.result).
const textChars = 600

// Options of a delegation.
type Options struct {
	Executor Entry
	// Executors, when set, share the tasks (`delegate --any`; Executor is
	// then unused): a task goes, as it starts, to one of those able to do
	// it (Task.Capability) whose weight fits in the free slots, the one
	// with the fewest in-flight weight, round robin among equals.
	Executors   []Entry
	Thread      string // "" is global
	Concurrency int    // slots at a time; DefaultConcurrency when 0
	Dir         string // the tasks' working directory; the current one when ""
	Runner      Runner
	Tx          vault.TxOptions // who records; Source is set to executor
	// Mode is the run mode (RunModes); auto or "": Arbitrate chooses it,
	// and Why says why (recorded as data.arbitration_reason).
	Mode, Why string
	// OnMode is told the mode the delegation runs in, and why, before
	// any task starts.
	OnMode func(mode, why string)
	// Sleep waits between tries (time.Sleep when nil; tests pass a no-op).
	Sleep func(time.Duration)
	// OnRecorded is called once per task, as its outcome is recorded (or
	// fails to be), one call at a time.
	OnRecorded func(Outcome)
}

// Attempt is one try of an executor, as data.attempts keeps it.
type Attempt struct {
	N       int    `json:"n"`
	MS      int64  `json:"ms"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// Outcome is what became of one task.
type Outcome struct {
	Index    int
	Executor Entry    // the executor it was given to
	ID       string   // the task's id (t1, t2, … when it had none)
	After    []string // the ids of the tasks it waited for
	Scope    string   // the folder it ran in, when it was not the delegation's
	Thread   string   // its thread, when it was not the delegation's
	Task     string
	Response *Response    // nil when every try failed
	Attempts []Attempt    // every try of the executor
	Event    *vault.Event // the event recorded; nil when the write failed
	Err      error        // the last failure: of the executor, or of the write
}

// CheckConcurrency validates a concurrency bound.
func CheckConcurrency(n int) error {
	if n < MinConcurrency || n > MaxConcurrency {
		return fault.New(fault.ErrInvalid, "delegate: concurrency %d: want %d–%d", n, MinConcurrency, MaxConcurrency)
	}
	return nil
}

// Delegate runs tasks, each a prompt without dependencies: DelegateTasks.
func Delegate(ctx context.Context, v *vault.Vault, tasks []string, opts Options) []Outcome {
	ts := make([]Task, len(tasks))
	for i, t := range tasks {
		ts[i] = Task{Prompt: t}
	}
	return DelegateTasks(ctx, v, ts, opts)
}

// DelegateTasks runs every task on opts.Executor in opts.Mode (ModeAuto or
// "": Arbitrate chooses), retrying as the taxonomy says, and records each
// outcome as one event through v.Update: as soon as it is known, or, queued,
// all together at the end. The outcomes come back in the order the tasks
// ran in (Order's, for dependencies).
func DelegateTasks(ctx context.Context, v *vault.Vault, tasks []Task, opts Options) []Outcome {
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Sleep == nil {
		opts.Sleep = time.Sleep
	}
	opts.Tx.Source = vault.SourceExecutor
	tasks, err := Order(tasks)
	if err != nil {
		return []Outcome{{Err: err}}
	}
	p := newPool(opts.Concurrency, opts.executors())
	if err := p.check(tasks); err != nil {
		return []Outcome{{Err: err}}
	}
	if opts.Dir == "" {
		opts.Dir, _ = os.Getwd()
	}
	if err := scopeDirs(tasks, opts.Dir); err != nil {
		return []Outcome{{Err: err}}
	}
	if mode, why := Arbitrate(tasks, Signals{}); mode == ModeSequential {
		// tasks that wait for others run in order, whatever was asked
		opts.Mode, opts.Why = mode, why
	}
	switch {
	case opts.Mode == "" || opts.Mode == ModeAuto:
		opts.Mode, opts.Why = Arbitrate(tasks, CurrentSignals(vaultBusy(v)))
	case opts.Why == "":
		opts.Why = "asked for"
	}
	if opts.OnMode != nil {
		opts.OnMode(opts.Mode, opts.Why)
	}
	if opts.Mode == ModeSequential {
		return sequential(ctx, v, tasks, opts, p)
	}
	out := make([]Outcome, len(tasks))
	var rec sync.Mutex // one write at a time from this process
	var wg sync.WaitGroup
	for i, task := range tasks {
		if opts.Mode == ModeStaggered && i > 0 {
			opts.Sleep(StaggerDelay)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := p.take(task.Capability)
			o := run(ctx, opts, i, task, p.execs[x])
			p.give(x)
			if opts.Mode == ModeQueued {
				out[i] = o
				return
			}
			rec.Lock()
			defer rec.Unlock()
			o.Event, o.Err = record(v, opts, o)
			out[i] = o
			if opts.OnRecorded != nil {
				opts.OnRecorded(o)
			}
		}()
	}
	wg.Wait()
	if opts.Mode == ModeQueued {
		recordAll(v, opts, out)
	}
	return out
}

// scopeDirs makes each task's scope an absolute path (relative ones are
// below dir), and refuses one that is not a directory.
func scopeDirs(tasks []Task, dir string) error {
	for i, t := range tasks {
		if t.Scope == "" {
			continue
		}
		abs := t.Scope
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(dir, abs)
		}
		abs = filepath.Clean(abs)
		info, err := os.Stat(abs)
		switch {
		case err != nil:
			return fault.New(fault.ErrInvalid, "delegate: task %s: scope %s: %v", t.ID, t.Scope, unwrapExec(err))
		case !info.IsDir():
			return fault.New(fault.ErrInvalid, "delegate: task %s: scope %s: not a directory", t.ID, t.Scope)
		}
		tasks[i].Scope = abs
	}
	return nil
}

// StaggerDelay spaces the starts of a staggered delegation.
const StaggerDelay = 500 * time.Millisecond

// vaultBusy reports whether another writer holds the vault lock now (a
// try of a millisecond, released at once).
func vaultBusy(v *vault.Vault) bool {
	release, err := v.Lock(vault.Lease{Command: "delegate: arbitration"}, time.Millisecond)
	if err != nil {
		return true
	}
	release()
	return false
}

// sequential runs the tasks one after the other, in order; a task is
// given the summaries of those it waits for after its prompt, and is not
// run when one of them failed.
func sequential(ctx context.Context, v *vault.Vault, tasks []Task, opts Options, p *pool) []Outcome {
	out := make([]Outcome, len(tasks))
	summaries := map[string]string{}
	for i, t := range tasks {
		var o Outcome
		var failed []string
		for _, d := range t.After {
			if _, ok := summaries[d]; !ok {
				failed = append(failed, d)
			}
		}
		if len(failed) > 0 {
			o = Outcome{Index: i, Executor: p.execs[p.peek(t.Capability)], Task: t.Prompt, ID: t.ID, After: t.After, Attempts: []Attempt{},
				Scope: t.Scope, Thread: t.Thread,
				Err: errorf(CodeDependency, nil, "task %s: not run: it waits for %s, which failed", t.ID, strings.Join(failed, ", "))}
		} else {
			prompt := t.Prompt
			if len(t.After) > 0 {
				prompt += "\n\nWhat the tasks it follows found:"
				for _, d := range t.After {
					prompt += "\n- " + d + ": " + summaries[d]
				}
			}
			withFound := t
			withFound.Prompt = prompt
			x := p.take(t.Capability)
			o = run(ctx, opts, i, withFound, p.execs[x])
			p.give(x)
			o.Task, o.After = t.Prompt, t.After
		}
		o.Event, o.Err = record(v, opts, o)
		if o.Err == nil && o.Response != nil {
			summaries[t.ID] = o.Response.Summary
		}
		out[i] = o
		if opts.OnRecorded != nil {
			opts.OnRecorded(o)
		}
	}
	return out
}

// run tries the task on e until it succeeds or its failure's tries are
// spent.
func run(ctx context.Context, opts Options, i int, task Task, e Entry) Outcome {
	o := Outcome{Index: i, Executor: e, Task: task.Prompt, ID: task.ID, After: task.After, Scope: task.Scope, Thread: task.Thread}
	dir := opts.Dir
	if task.Scope != "" {
		dir = task.Scope
	}
	req := Request{Type: TypeTask, ID: task.ID, Prompt: task.Prompt, Cwd: dir}
	for n := 1; ; n++ {
		start := time.Now()
		resp, err := opts.Runner.Run(ctx, o.Executor, req, 0)
		a := Attempt{N: n, MS: time.Since(start).Milliseconds()}
		if err == nil {
			o.Attempts = append(o.Attempts, a)
			o.Response, o.Err = resp, nil
			return o
		}
		a.Code, a.Message = CodeOf(err), err.Error()
		o.Attempts = append(o.Attempts, a)
		o.Err = err
		if n >= Retried(a.Code) || ctx.Err() != nil {
			return o
		}
		opts.Sleep(Backoff(n, jitter))
	}
}

// executors are the executors the tasks go to.
func (opts Options) executors() []Entry {
	if len(opts.Executors) > 0 {
		return opts.Executors
	}
	return []Entry{opts.Executor}
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// delegationData is an event's data.
type delegationData struct {
	Task        string          `json:"task"`
	Executor    string          `json:"executor"`
	Mode        string          `json:"mode"`
	ID          string          `json:"task_id"`
	After       []string        `json:"after,omitempty"`
	Scope       string          `json:"scope,omitempty"`
	Arbitration string          `json:"arbitration"`
	Why         string          `json:"arbitration_reason,omitempty"`
	Attempts    []Attempt       `json:"attempts"`
	DurationMS  int64           `json:"duration_ms,omitempty"`
	Tokens      *int64          `json:"tokens,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	Checksum    string          `json:"checksum,omitempty"`
	ChecksumBy  string          `json:"checksum_by,omitempty"`
	Error       string          `json:"error,omitempty"`
	Code        string          `json:"code,omitempty"`
}

// Event builds the event an outcome is recorded as.
func Event(opts Options, o Outcome) (*vault.Event, error) {
	mode := opts.Mode
	if mode == "" || mode == ModeAuto {
		mode = ModeConcurrent
	}
	e := o.Executor
	d := delegationData{Task: o.Task, ID: o.ID, After: o.After, Scope: o.Scope, Executor: e.Name, Mode: e.Mode,
		Arbitration: mode, Why: opts.Why, Attempts: o.Attempts}
	thread := opts.Thread
	if o.Thread != "" {
		thread = o.Thread
	}
	ev := &vault.Event{Kind: KindDelegation, Source: vault.SourceExecutor, Thread: thread}
	if o.Response != nil {
		r := o.Response
		d.DurationMS = o.Attempts[len(o.Attempts)-1].MS
		d.Tokens, d.Result, d.Checksum, d.ChecksumBy = r.Tokens, r.Result, r.Checksum, r.By
		ev.Text = clip(strings.TrimSpace(r.Summary), textChars)
	} else {
		ev.Kind = KindDelegationFailed
		d.Code, d.Error = CodeOf(o.Err), o.Err.Error()
		ev.Text = clip("delegation failed: "+o.Err.Error(), textChars)
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	ev.Data = data
	return ev, nil
}

// record writes the outcome's event in a transaction of its own
// (writeEvents), and returns it with the outcome's error, or the write's.
func record(v *vault.Vault, opts Options, o Outcome) (*vault.Event, error) {
	ev, err := Event(opts, o)
	if err != nil {
		return nil, err
	}
	evs, err := writeEvents(v, opts, []*vault.Event{ev})
	if err != nil {
		return nil, err
	}
	return evs[0], o.Err
}

// recordAll writes every outcome's event in one transaction: a queued
// delegation's, whose vault was busy when it began.
func recordAll(v *vault.Vault, opts Options, out []Outcome) {
	var evs []*vault.Event
	var idx []int // the outcome of each event
	for i := range out {
		ev, err := Event(opts, out[i])
		if err != nil {
			out[i].Err = err
			continue
		}
		evs, idx = append(evs, ev), append(idx, i)
	}
	written, werr := writeEvents(v, opts, evs)
	for j, i := range idx {
		if werr != nil {
			out[i].Err = werr
		} else {
			out[i].Event = written[j]
		}
	}
	if opts.OnRecorded != nil {
		for _, o := range out {
			opts.OnRecorded(o)
		}
	}
}

// writeEvents appends evs in one transaction, retrying a busy vault (up to
// 5 tries) and a failed write (up to 3); a refusal by the policy is final.
// It returns the events as sealed.
func writeEvents(v *vault.Vault, opts Options, evs []*vault.Event) ([]*vault.Event, error) {
	for _, ev := range evs {
		if ev.Thread != "" {
			if _, err := vault.ParseThread(ev.Thread); err != nil {
				return nil, err
			}
		}
	}
	for n := 1; ; n++ {
		var queued []*vault.Event
		_, err := v.Update(opts.Tx, func(tx *vault.Tx) error {
			queued = queued[:0]
			for _, ev := range evs {
				e := *ev
				queued = append(queued, tx.Append(&e))
			}
			if len(evs) == 1 {
				tx.Subject(evs[0].Kind + ": " + clip(evs[0].Text, 60))
			} else {
				tx.Subject(fmt.Sprintf("executor: %d delegations", len(evs)))
			}
			return nil
		})
		if err == nil {
			return queued, nil
		}
		code := ""
		switch {
		case errors.Is(err, fault.ErrForbidden):
			return nil, err
		case errors.Is(err, fault.ErrBusy):
			code = CodeLockTimeout
		case errors.Is(err, fault.ErrIO):
			code = CodeAuditWrite
		default:
			return nil, err
		}
		if n >= Retried(code) {
			return nil, &Error{Code: code, Msg: "delegation: recording the result: " + err.Error(), Err: err}
		}
		opts.Sleep(Backoff(n, jitter))
	}
}

// pool hands the tasks of a delegation to its executors within the
// concurrency bound: a weighted semaphore whose slots are taken on behalf
// of the executor chosen, which keeps each executor's in-flight weight.
type pool struct {
	mu    sync.Mutex
	cond  *sync.Cond
	bound int
	free  int
	execs []Entry
	load  []int // in-flight weight of each executor
	next  int   // where the round robin goes on from
}

func newPool(bound int, execs []Entry) *pool {
	p := &pool{bound: bound, free: bound, execs: execs, load: make([]int, len(execs))}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// check refuses tasks that no executor of the pool can do.
func (p *pool) check(tasks []Task) error {
	for _, t := range tasks {
		if slices.ContainsFunc(p.execs, func(e Entry) bool { return e.Can(t.Capability) }) {
			continue
		}
		if len(p.execs) == 1 {
			e := p.execs[0]
			return fault.New(fault.ErrInvalid, "delegate: task %s needs the capability %s, which executor %s lacks (it has %s)",
				t.ID, t.Capability, e.Name, strings.Join(e.Caps(), ", ")).
				WithHint("memvault executor show %s lists its capabilities; delegate --any chooses among every active one", e.Name)
		}
		return fault.New(fault.ErrInvalid, "delegate: task %s needs the capability %s, which no active executor has", t.ID, t.Capability).
			WithHint("memvault executor show NAME lists an executor's capabilities")
	}
	return nil
}

// weight is the slots a run of executor i takes: its weight, within the
// bound.
func (p *pool) weight(i int) int { return min(max(p.execs[i].Weight, 1), p.bound) }

// take waits until an executor able to do a task needing capability need
// fits in the free slots, chooses one (choose), takes its slots, and
// returns its index.
func (p *pool) take(need string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if i := choose(p.execs, p.load, p.free, p.bound, need, p.next); i >= 0 {
			w := p.weight(i)
			p.load[i] += w
			p.free -= w
			p.next = (i + 1) % len(p.execs)
			return i
		}
		p.cond.Wait()
	}
}

// give gives back the slots of a run of executor i.
func (p *pool) give(i int) {
	p.mu.Lock()
	w := p.weight(i)
	p.load[i] -= w
	p.free += w
	p.mu.Unlock()
	p.cond.Broadcast()
}

// peek is the executor a task needing need would go to now, slots aside.
func (p *pool) peek(need string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := choose(p.execs, p.load, p.bound, p.bound, need, p.next); i >= 0 {
		return i
	}
	return 0
}

// choose picks the executor of a task needing the capability need (""
// for any): among those able to do it whose weight fits in free slots of
// bound, the one with the fewest in-flight weight (load), and among
// equals the first from next on, round robin. -1 when none fits now. It
// reads nothing: a pure function of its arguments.
func choose(execs []Entry, load []int, free, bound int, need string, next int) int {
	best := -1
	for k := range execs {
		i := (next + k) % len(execs)
		e := execs[i]
		if !e.Can(need) || min(max(e.Weight, 1), bound) > free {
			continue
		}
		if best < 0 || load[i] < load[best] {
			best = i
		}
	}
	return best
}
