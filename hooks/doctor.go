package hooks

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memvault/memvault/vault/configedit"
)

// Wiring is what `memvault doctor` reports for one harness.
type Wiring struct {
	Harness string `json:"harness"`
	Config  string `json:"config,omitempty"` // the file (OpenClaw: the folder) memvault installed; "" when not installed
	// LookedAt is where doctor looked for it: Config, or where an install
	// would write.
	LookedAt string            `json:"looked_at"`
	Wired    []string          `json:"wired"`              // runtime events wired
	Missing  []string          `json:"missing,omitempty"`  // runtime events memvault could wire but are not
	Degraded map[string]string `json:"degraded,omitempty"` // runtime event → what happens instead
	Binary   string            `json:"binary,omitempty"`   // the binary the hooks run
	SameBin  bool              `json:"same_binary"`
	// MCP is memvault's MCP server in the harness's configuration.
	MCP *MCPStatus `json:"mcp"`
	// Problems is what stops memvault's hooks from running as installed
	// (severity error) or may (warning), each with its fix.
	Problems []Problem `json:"problems"`
}

// Problem is one thing doctor found, in one line, and what fixes it.
type Problem struct {
	Problem  string `json:"problem"`
	Fix      string `json:"fix"`
	Severity string `json:"severity"` // SeverityError or SeverityWarning
}

// The severities of a Problem: an error means the hooks do not run, or
// run and store nothing; a warning means they may not, or run another
// memvault than this one.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

func (w *Wiring) fail(problem, fix string) {
	w.Problems = append(w.Problems, Problem{Problem: problem, Fix: fix, Severity: SeverityError})
}

func (w *Wiring) warn(problem, fix string) {
	w.Problems = append(w.Problems, Problem{Problem: problem, Fix: fix, Severity: SeverityWarning})
}

// Installed reports whether memvault's config for the harness was found.
func (w Wiring) Installed() bool { return w.Config != "" }

// installCommand is the command that (re)installs the harness at the
// installer's scope.
func (in *Installer) installCommand() string {
	if in.Scope == ScopeUser {
		return "memvault install " + in.Harness + " --scope user"
	}
	return "memvault install " + in.Harness
}

// degradedFor is what harness cannot give memvault, and what memvault
// does instead (docs/HARNESSES.md says the same): runtime event → what
// happens instead. The table is built on each call, so no caller can change
// what the next one reads.
func degradedFor(harness string) map[string]string {
	return map[string]map[string]string{
		"claude-code": {},
		"codex":       {"compaction-complete": "PostCompact carries no summary: the compaction node takes the summary Codex writes into its rollout file (the compacted record)"},
		"gemini": {
			"compaction-complete": "no post-compression event: no compaction node is made at compression; the history is imported at the next event and summarised at session end",
			"pre-compaction":      "PreCompress fires before every model call, not only before a compression: each is an incremental import",
		},
		"opencode": {
			"session-end":         "no session-end event: the plugin ends its sessions when the OpenCode process exits and at session.deleted; after a kill, the summary node is made at the next session's first turn end",
			"compaction-complete": "session.compacted carries only the session id: the plugin sends the text of the compaction's summary message, read from the event bus",
			"pre-compaction":      "experimental.session.compacting adds memory to the compaction prompt; there is no transcript file to import first",
			"stop":                "no transcript file: the plugin sends each prompt and the last assistant message",
		},
		"openclaw": {
			"session-start": "session_start cannot inject: the session starts (start context, one session.started) at its first prompt in each OpenClaw process, after session_start on the Gateway, without it under openclaw agent --local (source resume when the session has history); the start context goes with every prompt",
			"session-end":   "session_end fires only on the Gateway (new, reset, rollover, deletion, its shutdown); under openclaw agent --local the summary node is made at the next session's first turn end",
			"stop":          "no transcript file memvault reads (OpenClaw keeps SQLite): the plugin sends the last assistant message",
		},
	}[harness]
}

// Doctor inspects a harness's installed configuration: the events wired,
// the binary the hooks run, what the harness itself needs before it runs
// them (Codex's trust, OpenClaw's registration and Gateway), and
// memvault's MCP server there. A harness that is not installed has no
// problem: it is not used with memvault.
func (in *Installer) Doctor() Wiring {
	w := in.doctorHooks()
	in.doctorMCP(&w)
	return w
}

func (in *Installer) doctorHooks() Wiring {
	path := in.configPath()
	w := Wiring{Harness: in.Harness, Degraded: degradedFor(in.Harness), Wired: []string{}, LookedAt: path, Problems: []Problem{}}
	data, err := os.ReadFile(path)
	if in.Harness == "openclaw" {
		data, err = os.ReadFile(filepath.Join(path, "index.js"))
	}
	if err != nil {
		return w
	}
	w.Config = path
	switch in.Harness {
	case "opencode", "openclaw":
		// OpenCode's session end is the plugin's exit handler and
		// session.deleted (degradedFor says so).
		w.Wired = []string{"session-start", "prompt-submit", "stop", "pre-compaction", "compaction-complete", "session-end"}
		w.Binary = pluginBinary(data)
	default:
		var doc struct {
			Hooks map[string][]struct {
				Hooks []struct {
					Command string `json:"command"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		if err := configedit.Decode(data, configedit.JSONC, &doc); err != nil {
			w.fail(path+" is not JSON (comments and trailing commas allowed), so doctor cannot tell which events it wires ("+err.Error()+")",
				"fix the file's syntax, then check its hooks against docs/HARNESSES.md")
			return w
		}
		for _, pair := range hookEvents[in.Harness] {
			found := false
			for _, g := range doc.Hooks[pair[0]] {
				for _, h := range g.Hooks {
					if isOurs(h.Command, in.Harness) {
						found = true
						w.Binary = commandBinary(h.Command)
					}
				}
			}
			if found {
				w.Wired = append(w.Wired, pair[1])
			} else {
				w.Missing = append(w.Missing, pair[1])
			}
		}
		if len(w.Wired) == 0 {
			// the harness's settings, without a hook of memvault's
			w.Config, w.Missing = "", nil
			return w
		}
	}
	sort.Strings(w.Missing)
	if len(w.Missing) > 0 {
		w.fail(fmt.Sprintf("%d of memvault's events are not wired: %s", len(w.Missing), strings.Join(w.Missing, ", ")), in.installCommand())
	}
	switch {
	case w.Binary == "":
	case !strings.Contains(w.Binary, "/"):
		// A portable command's name that PATH does not resolve here
		// (installedBinary resolves the names it finds).
		w.fail("the hooks run "+w.Binary+" from PATH, and this PATH has none: they do nothing",
			"put the memvault binary in a folder on PATH (the PATH the harness runs with), or "+in.installCommand()+" --scope user, which pins its path")
	default:
		w.SameBin = sameFile(w.Binary, in.Bin)
		if _, err := os.Stat(w.Binary); err != nil {
			w.fail("the hooks run "+w.Binary+", which does not exist", in.installCommand()+" again")
		} else if !w.SameBin {
			w.warn("the hooks run "+w.Binary+", not this memvault ("+in.Bin+")", in.installCommand()+" with the memvault you mean the hooks to run")
		}
	}
	switch in.Harness {
	case "codex":
		in.codexTrust(&w, data)
	case "openclaw":
		in.pluginCurrent(&w)
		in.openClawRegistration(&w)
	case "opencode":
		in.pluginCurrent(&w)
	}
	return w
}

func sameFile(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}
