package executor

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
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
	Executor    Entry
	Thread      string // "" is global
	Concurrency int    // slots at a time; DefaultConcurrency when 0
	Dir         string // the tasks' working directory; the current one when ""
	Runner      Runner
	Tx          vault.TxOptions // who records; Source is set to executor
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

// Delegate runs every task on opts.Executor, at most opts.Concurrency
// slots at a time, retrying as the taxonomy says, and records each
// outcome as one event through v.Update as soon as it is known. The
// outcomes come back in the tasks' order.
func Delegate(ctx context.Context, v *vault.Vault, tasks []string, opts Options) []Outcome {
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Sleep == nil {
		opts.Sleep = time.Sleep
	}
	opts.Tx.Source = vault.SourceExecutor
	sem := newSlots(opts.Concurrency)
	weight := min(max(opts.Executor.Weight, 1), opts.Concurrency)
	out := make([]Outcome, len(tasks))
	var rec sync.Mutex // one write at a time from this process
	var wg sync.WaitGroup
	for i, task := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem.acquire(weight)
			o := run(ctx, opts, i, task)
			sem.release(weight)
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
	return out
}

// run tries the task until it succeeds or its failure's tries are spent.
func run(ctx context.Context, opts Options, i int, task string) Outcome {
	o := Outcome{Index: i, Task: task}
	req := Request{Type: TypeTask, Prompt: task, Cwd: opts.Dir}
	for n := 1; ; n++ {
		start := time.Now()
		resp, err := opts.Runner.Run(ctx, opts.Executor, req, 0)
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
	Arbitration string          `json:"arbitration"`
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
	d := delegationData{Task: o.Task, Executor: opts.Executor.Name, Mode: opts.Executor.Mode,
		Arbitration: "concurrent", Attempts: o.Attempts}
	ev := &vault.Event{Kind: KindDelegation, Source: vault.SourceExecutor, Thread: opts.Thread}
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

// record writes the outcome's event in a transaction of its own, retrying
// a busy vault (up to 5 tries) and a failed write (up to 3); a refusal by
// the policy is final.
func record(v *vault.Vault, opts Options, o Outcome) (*vault.Event, error) {
	if opts.Thread != "" {
		if _, err := vault.ParseThread(opts.Thread); err != nil {
			return nil, err
		}
	}
	ev, err := Event(opts, o)
	if err != nil {
		return nil, err
	}
	for n := 1; ; n++ {
		var queued *vault.Event
		res, err := v.Update(opts.Tx, func(tx *vault.Tx) error {
			e := *ev
			queued = tx.Append(&e)
			tx.Subject(ev.Kind + ": " + clip(ev.Text, 60))
			return nil
		})
		if err == nil {
			for _, e := range res.Events {
				if e.ID == queued.ID {
					return e, o.Err
				}
			}
			return queued, o.Err
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

// slots is a weighted semaphore: acquire(w) waits until w slots are free.
type slots struct {
	mu   sync.Mutex
	cond *sync.Cond
	free int
}

func newSlots(n int) *slots {
	s := &slots{free: n}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *slots) acquire(w int) {
	s.mu.Lock()
	for s.free < w {
		s.cond.Wait()
	}
	s.free -= w
	s.mu.Unlock()
}

func (s *slots) release(w int) {
	s.mu.Lock()
	s.free += w
	s.mu.Unlock()
	s.cond.Broadcast()
}
