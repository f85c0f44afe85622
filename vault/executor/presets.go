package executor

import (
	"slices"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/fault"
)

// presetTable is what `executor add --preset` fills in for the harness
// CLIs (docs/EXECUTORS.md, "Presets"): each prints its answer as text, so
// each is plain; each calls a model, so a try may take minutes, and its
// ping is its --version, which answers without one, given PresetPingTimeout
// (a Node CLI takes 2 s to start on a quiet machine).
//
// The prompt is never an argument a CLI could read as an option: it
// follows a "--" (claude, codex, opencode, ollama) or is the value of
// --prompt= (gemini). Checked against the real CLIs by
// hooks/e2e_executor_test.go (claude, gemini: a task starting with "--")
// and by hand (codex, opencode: a task "--version" went to the model).
func presetTable() map[string]Entry {
	plain := func(command string, args ...string) Entry {
		return Entry{Command: command, Args: args, Mode: ModePlain, TimeoutText: "5m", Ping: []string{"--version"},
			PingTimeoutText: PresetPingTimeout.String()}
	}
	return map[string]Entry{
		"claude-code": plain("claude", "-p", "--", "{prompt}"),
		// codex exec refuses a folder that is not a git repository (a
		// task's need not be one) unless told; read-only, as an executor
		// reads and summarises, and memvault records.
		"codex":    plain("codex", "exec", "--skip-git-repo-check", "--sandbox", "read-only", "--", "{prompt}"),
		"gemini":   plain("gemini", "--prompt={prompt}"),
		"opencode": plain("opencode", "run", "--", "{prompt}"),
		"ollama":   plain("ollama", "run"), // the model, then -- {prompt}
		"generic":  {Mode: ModePlain},      // the command given; {prompt} last unless it names it
	}
}

// PresetPingTimeout bounds the ping (--version) of a harness CLI's preset.
const PresetPingTimeout = 15 * time.Second

// Presets lists the presets' names, sorted.
func Presets() []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range presetTable() {
			if !yield(k) {
				return
			}
		}
	})
}

// Preset is the entry the preset name makes, with args, what follows the
// executor's name on the command line: nothing for a harness CLI, the
// model for ollama, the command and its arguments for generic.
func Preset(name string, args []string) (Entry, error) {
	e, ok := presetTable()[name]
	if !ok {
		return Entry{}, fault.New(fault.ErrInvalid, "executor add: --preset %q: want one of %s", name, strings.Join(Presets(), ", "))
	}
	switch name {
	case "ollama":
		if len(args) != 1 {
			return Entry{}, fault.New(fault.ErrInvalid, "executor add --preset ollama: want the model after --, e.g. -- llama3.2")
		}
		e.Args = append(slices.Clone(e.Args), args[0], "--", "{prompt}")
	case "generic":
		if len(args) == 0 {
			return Entry{}, fault.New(fault.ErrInvalid, "executor add --preset generic: want the command after --")
		}
		e.Command, e.Args = args[0], slices.Clone(args[1:])
		if !slices.ContainsFunc(e.Args, func(a string) bool { return strings.Contains(a, "{prompt}") }) {
			e.Args = append(e.Args, "{prompt}")
		}
	default:
		if len(args) > 0 {
			return Entry{}, fault.New(fault.ErrInvalid, "executor add --preset %s: takes no command (got %q)", name, args[0])
		}
	}
	return e, nil
}
