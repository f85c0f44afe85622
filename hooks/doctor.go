package hooks

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Wiring is what `memvault doctor` reports for one harness.
type Wiring struct {
	Harness  string            `json:"harness"`
	Config   string            `json:"config,omitempty"`
	Wired    []string          `json:"wired"`              // runtime events wired
	Missing  []string          `json:"missing,omitempty"`  // runtime events memvault could wire but are not
	Degraded map[string]string `json:"degraded,omitempty"` // runtime event → what happens instead
	Binary   string            `json:"binary,omitempty"`   // the binary the hooks run
	SameBin  bool              `json:"same_binary"`
	Problems []string          `json:"problems,omitempty"`
}

// Degraded is what each harness cannot give memvault, and what memvault
// does instead (docs/HARNESSES.md says the same).
var Degraded = map[string]map[string]string{
	"claude-code": {},
	"codex":       {"compaction-complete": "PostCompact carries no summary: the compaction node takes the summary Codex writes into its rollout file (the compacted record)"},
	"gemini": {
		"compaction-complete": "no post-compression event: no compaction node is made at compression; the history is imported at the next event and summarised at session end",
		"pre-compaction":      "PreCompress fires before every model call, not only before a compression: each is an incremental import",
	},
	"opencode": {
		"session-end":    "no session-end event: session.idle (after every turn) imports and commits; the summary node is made at the next session's first turn end",
		"pre-compaction": "experimental.session.compacting adds memory to the compaction prompt; there is no transcript file to import first",
		"stop":           "no transcript file: the plugin sends each prompt and the last assistant message",
	},
	"openclaw": {
		"session-start": "session_start fires only with a running Gateway: the plugin starts the session at the first prompt instead",
		"session-end":   "session_end fires only with a running Gateway: without it the summary node is made at the next session's first turn end",
		"stop":          "no transcript file memvault reads (OpenClaw keeps SQLite): the plugin sends the last assistant message",
	},
}

// Doctor inspects a harness's installed configuration.
func (in *Installer) Doctor() Wiring {
	w := Wiring{Harness: in.Harness, Degraded: Degraded[in.Harness], Wired: []string{}}
	path := in.configPath()
	data, err := os.ReadFile(path)
	if in.Harness == "openclaw" {
		data, err = os.ReadFile(filepath.Join(path, "index.js"))
	}
	if err != nil {
		w.Problems = append(w.Problems, "not installed ("+path+")")
		return w
	}
	w.Config = path
	switch in.Harness {
	case "opencode", "openclaw":
		w.Wired = []string{"session-start", "prompt-submit", "stop", "pre-compaction", "compaction-complete"}
		if in.Harness == "openclaw" {
			w.Wired = append(w.Wired, "session-end")
		}
		if i := bytes.Index(data, []byte("const BIN = ")); i >= 0 {
			line := data[i+len("const BIN = "):]
			if j := bytes.IndexByte(line, '\n'); j >= 0 {
				line = line[:j]
			}
			if s, err := strconv.Unquote(string(bytes.TrimSpace(line))); err == nil {
				w.Binary = s
			}
		}
	default:
		var doc struct {
			Hooks map[string][]struct {
				Hooks []struct {
					Command string `json:"command"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			w.Problems = append(w.Problems, path+" is not plain JSON")
			return w
		}
		for _, pair := range hookEvents[in.Harness] {
			found := false
			for _, g := range doc.Hooks[pair[0]] {
				for _, h := range g.Hooks {
					if isOurs(h.Command, in.Harness) {
						found = true
						if bin, _, ok := strings.Cut(h.Command, " hook "); ok {
							w.Binary = strings.Trim(bin, "'")
						}
					}
				}
			}
			if found {
				w.Wired = append(w.Wired, pair[1])
			} else {
				w.Missing = append(w.Missing, pair[1])
			}
		}
	}
	sort.Strings(w.Missing)
	if w.Binary != "" {
		w.SameBin = sameFile(w.Binary, in.Bin)
		if _, err := os.Stat(w.Binary); err != nil {
			w.Problems = append(w.Problems, "the hooks run "+w.Binary+", which does not exist: run memvault install "+in.Harness+" again")
		} else if !w.SameBin {
			w.Problems = append(w.Problems, "the hooks run "+w.Binary+", not this memvault ("+in.Bin+")")
		}
	}
	return w
}

func sameFile(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}
