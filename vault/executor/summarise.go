package executor

// Model-written summaries (docs/EXECUTORS.md, "Summaries"): memvault.toml's
// [summarise] table names the executor that writes them and the time it
// is given. This file reads the table and makes the one call; what the
// summary is of, and where it lands, is vault/lineage's.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
)

// DefaultSummariseTimeout is the time a summary's executor gets when
// [summarise] names none: a harness CLI's model answers a summary in
// seconds to tens of seconds.
const DefaultSummariseTimeout = 30 * time.Second

// Why a summary fell back to the deterministic one, besides the runner's
// codes (CodeTimeout, CodeCrash, CodeMalformed, CodeChecksum, …).
const (
	CodeConfig       = "config"       // [summarise] does not parse
	CodeUnregistered = "unregistered" // it names no registered executor
	CodeInactive     = "inactive"     // the executor is marked inactive
	CodePolicy       = "policy"       // the policy lets no executor write
	CodeStale        = "stale"        // the material changed while the executor ran
)

// SummariseConfig is memvault.toml's [summarise] table.
type SummariseConfig struct {
	Executor string        // the executor's name
	Timeout  time.Duration // the time it gets for one summary
}

// Summariser reads the [summarise] table. It reports false, and no
// error, when the table names no executor: summaries are deterministic,
// as they always were. A table whose values are wrong is an error of
// class ErrInvalid (a writer falls back on it, saying why).
func Summariser(v *vault.Vault) (SummariseConfig, bool, error) {
	s := v.Config.Summarise
	if s.Executor == "" {
		if s.Timeout != "" {
			return SummariseConfig{}, false, fault.New(fault.ErrInvalid, "%s: [summarise] has a timeout but no executor", vault.ConfigFile)
		}
		return SummariseConfig{}, false, nil
	}
	if err := CheckName(s.Executor); err != nil {
		return SummariseConfig{}, false, fault.New(fault.ErrInvalid, "%s: [summarise] executor %q: not an executor's name", vault.ConfigFile, s.Executor)
	}
	cfg := SummariseConfig{Executor: s.Executor, Timeout: DefaultSummariseTimeout}
	if s.Timeout != "" {
		d, err := time.ParseDuration(s.Timeout)
		if err != nil || d <= 0 {
			return SummariseConfig{}, false, fault.New(fault.ErrInvalid, "%s: [summarise] timeout %q: not a positive duration like 30s", vault.ConfigFile, s.Timeout)
		}
		cfg.Timeout = d
	}
	return cfg, true, nil
}

// Summary is what one summary's call came to: the verified response, or
// the failure a writer falls back on (Code and Err), and the try as
// data.attempts keeps it.
type Summary struct {
	Executor Entry
	Response *Response // nil when it failed
	Attempt  Attempt
	Code     string // the failure's code; "" when Response is set
	Err      error
}

// SummaryEntry finds the executor cfg names, ready to run: a name that
// is not registered, and an inactive executor, are failures with their
// codes (CodeUnregistered, CodeInactive).
func SummaryEntry(v *vault.Vault, cfg SummariseConfig) (Entry, error) {
	e, err := Lookup(v, cfg.Executor)
	if errors.Is(err, fault.ErrNotFound) {
		return Entry{}, errorf(CodeUnregistered, err, "summarise: executor %s: not registered", cfg.Executor)
	}
	if err != nil {
		return Entry{}, errorf(CodeConfig, err, "summarise: %v", err)
	}
	if e.Status != StatusActive {
		return e, errorf(CodeInactive, nil, "summarise: executor %s: inactive: %s", e.Name, e.Reason)
	}
	return e, nil
}

// Summarise asks the executor cfg names for a summary of prompt: one
// try, within min(cfg.Timeout, limit) (limit 0: cfg.Timeout), in a
// scratch working directory (the executor reads the prompt, not the
// project). It never retries: a failure is the caller's cue to write the
// deterministic summary, and the call holds no lock of the vault.
func Summarise(ctx context.Context, v *vault.Vault, cfg SummariseConfig, r Runner, id, prompt string, limit time.Duration) Summary {
	e, err := SummaryEntry(v, cfg)
	if err != nil {
		return Summary{Executor: e, Code: CodeOf(err), Err: err, Attempt: Attempt{N: 0, Code: CodeOf(err), Message: err.Error()}}
	}
	timeout := cfg.Timeout
	if limit > 0 && limit < timeout {
		timeout = limit
	}
	start := time.Now()
	resp, err := r.Run(ctx, e, Request{Type: TypeTask, ID: id, Prompt: prompt, Cwd: os.TempDir()}, timeout)
	a := Attempt{N: 1, MS: time.Since(start).Milliseconds()}
	if err != nil {
		a.Code, a.Message = CodeOf(err), err.Error()
		return Summary{Executor: e, Attempt: a, Code: a.Code, Err: err}
	}
	return Summary{Executor: e, Response: resp, Attempt: a}
}

// SummaryFailedEvent is the executor.failed event a summary's fallback is
// recorded as: the shape of a failed delegation's (task, executor, mode,
// attempts, code, error), whose task is what was to be summarised and
// whose arbitration is "summary", so `memvault audit` lists it.
func SummaryFailedEvent(what, thread string, s Summary) *vault.Event {
	attempts := []Attempt{}
	if s.Attempt.N > 0 {
		attempts = append(attempts, s.Attempt)
	}
	msg := "summary failed"
	if s.Err != nil {
		msg = s.Err.Error()
	}
	d := delegationData{Task: what, ID: "summary", Executor: s.Executor.Name, Mode: s.Executor.Mode,
		Arbitration: "summary", Why: "[summarise] in " + vault.ConfigFile, Attempts: attempts, Code: s.Code, Error: msg}
	if d.Executor == "" {
		d.Executor = "(none)"
	}
	data, _ := json.Marshal(d)
	return &vault.Event{Kind: KindDelegationFailed, Source: vault.SourceExecutor, Thread: thread,
		Text: clip("summary fell back to the deterministic one: "+msg, textChars), Data: data}
}
