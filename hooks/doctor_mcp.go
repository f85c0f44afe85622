package hooks

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/memvault/memvault/vault/configedit"
)

// MCPStatus is what doctor found of memvault's MCP server in a harness's
// configuration (docs/MCP.md, "Harnesses").
type MCPStatus struct {
	Config     string `json:"config"`     // the file the harness keeps its MCP servers in
	Registered bool   `json:"registered"` // an entry named memvault is there
	// Ours: the entry runs memvault mcp (memvault's own, as install
	// writes it); an entry under the name that runs something else is
	// the user's.
	Ours    bool     `json:"ours"`
	Command []string `json:"command,omitempty"` // the entry's command line
	Binary  string   `json:"binary,omitempty"`  // its binary, found on PATH when bare
	SameBin bool     `json:"same_binary"`
	Enabled bool     `json:"enabled"`
}

// doctorMCP reads the harness's MCP servers and adds to w what stops the
// harness from starting memvault's server: a binary that is gone or not
// executable, the entry switched off, the user's rejection of it (Claude
// Code), or a file that does not parse. Only for a harness whose hooks
// are installed: the others are not used with memvault.
func (in *Installer) doctorMCP(w *Wiring) {
	t := in.mcpTarget()
	st := &MCPStatus{Config: t.Path}
	w.MCP = st
	data, err := os.ReadFile(t.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var doc map[string]any
	if err == nil {
		doc, err = readMCPConfig(data, t)
	}
	if err != nil {
		if w.Installed() && !t.Shared { // a shared file's problem is reported with the hooks
			w.fail("cannot read the MCP servers in "+t.Path+": "+oneLine(err.Error()), "fix the file's syntax (the harness cannot read it either)")
		}
		return
	}
	var entry any = doc
	for _, k := range append(append([]any{}, t.Servers...), mcpName) {
		m, _ := entry.(map[string]any)
		entry = m[k.(string)]
	}
	if entry == nil {
		return
	}
	st.Registered, st.Ours, st.Command = true, in.mcpOurs(entry), in.mcpArgv(entry)
	m, _ := entry.(map[string]any)
	st.Enabled = m["enabled"] != false && m["disabled"] != true
	if !w.Installed() {
		return
	}
	if len(st.Command) > 0 && (st.Ours || filepath.Base(st.Command[0]) == "memvault") {
		st.Binary = installedBinary(st.Command[0])
	}
	switch {
	case st.Binary == "" && !st.Ours:
		w.warn("the MCP server named "+mcpName+" in "+t.Path+" is not memvault's (it runs "+strings.Join(st.Command, " ")+"), so agents cannot call memvault's tools through it",
			"rename or remove that entry, then "+in.installCommand()+" (docs/MCP.md, \"Harnesses\")")
	case !strings.Contains(st.Binary, "/"):
		w.fail("the MCP server runs "+st.Binary+" from PATH, and this PATH has none: the harness cannot start it",
			"put the memvault binary in a folder on PATH (the PATH the harness runs with), or "+in.installCommand()+" --scope user, which pins its path")
	default:
		st.SameBin = sameFile(st.Binary, in.Bin)
		if info, err := os.Stat(st.Binary); err != nil {
			w.fail("the MCP server runs "+st.Binary+", which does not exist", in.installCommand()+" again")
		} else if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
			w.fail("the MCP server runs "+st.Binary+", which is not executable", "chmod +x "+st.Binary+", or "+in.installCommand()+" again")
		} else if !st.SameBin {
			w.warn("the MCP server runs "+st.Binary+", not this memvault ("+in.Bin+")", in.installCommand()+" with the memvault you mean the server to run")
		}
	}
	if !st.Enabled {
		w.fail("memvault's MCP server is switched off in "+t.Path, "remove its \"enabled\": false (or \"disabled\": true), or "+in.installCommand())
	}
	if in.Harness == "claude-code" && in.Scope == ScopeProject {
		if where := in.claudeRejected(); where != "" {
			w.fail("Claude Code was told not to start the project's MCP server "+mcpName+" (disabledMcpjsonServers in "+where+")",
				"run claude in the project, open /mcp and enable "+mcpName+", or remove it from disabledMcpjsonServers in "+where)
		}
	}
}

// readMCPConfig parses a harness's MCP config in its syntax.
func readMCPConfig(data []byte, t mcpTarget) (map[string]any, error) {
	doc := map[string]any{}
	if t.TOML {
		if _, err := toml.Decode(string(data), &doc); err != nil {
			return nil, err
		}
		return doc, nil
	}
	if err := configedit.Decode(data, t.Dialect, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// claudeRejected names the file where the person turned down the project's
// memvault server when Claude Code asked (~/.claude.json, under the
// project), or listed it in a settings file's disabledMcpjsonServers; ""
// when none did.
func (in *Installer) claudeRejected() string {
	lists := func(v any) bool {
		l, _ := v.([]any)
		return slices.Contains(l, any(mcpName))
	}
	for _, p := range []string{filepath.Join(in.Project, ".claude", "settings.local.json"), filepath.Join(in.Project, ".claude", "settings.json"),
		filepath.Join(in.Home, ".claude", "settings.json")} {
		var s map[string]any
		if data, err := os.ReadFile(p); err == nil && configedit.Decode(data, configedit.JSONC, &s) == nil && lists(s["disabledMcpjsonServers"]) {
			return p
		}
	}
	global := filepath.Join(in.Home, ".claude.json")
	data, err := os.ReadFile(global)
	if err != nil {
		return ""
	}
	var g struct {
		Projects map[string]map[string]any `json:"projects"`
	}
	if json.Unmarshal(data, &g) != nil {
		return ""
	}
	for _, root := range samePaths(in.Project) {
		if lists(g.Projects[root]["disabledMcpjsonServers"]) {
			return global
		}
	}
	return ""
}
