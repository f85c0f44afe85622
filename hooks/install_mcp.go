package hooks

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/memvault/memvault/vault/configedit"
)

// memvault's MCP server (`memvault mcp`, stdio) is registered in each
// harness's own list of MCP servers under this name, beside the hooks:
// docs/MCP.md, "Harnesses".
const mcpName = "memvault"

// mcpTarget is where a harness keeps its MCP servers at a scope.
type mcpTarget struct {
	Path    string
	TOML    bool // Codex's config.toml; else JSON in Dialect
	Dialect configedit.Dialect
	Servers []any // the keys down to the object (TOML: table) of servers
	// Shared: the file memvault's hooks (or plugin registration) are in
	// too, edited with them in one change (Gemini CLI, OpenClaw).
	Shared bool
	// Prune: the folders a removal of the file takes with it when empty
	// (those an install made for it).
	Prune []string
}

// mcpTarget is where the installer registers memvault's MCP server:
//
//   - Claude Code: the project's .mcp.json (the team's, committed, where
//     `claude mcp add --scope project` writes), or at user scope
//     ~/.claude.json's mcpServers (where `claude mcp add --scope user`
//     writes: Claude Code's settings.json takes no MCP servers);
//   - Codex: config.toml beside hooks.json, [mcp_servers.memvault]
//     (.codex/config.toml, read in trusted projects, or
//     $CODEX_HOME/config.toml);
//   - Gemini CLI: mcpServers in the settings.json the hooks are in;
//   - OpenCode: mcp in opencode.json (the project's first of opencode.json,
//     opencode.jsonc, .opencode/opencode.json, .opencode/opencode.jsonc that
//     exists, as `opencode mcp add` picks it; ~/.config/opencode/ at user
//     scope);
//   - OpenClaw: mcp.servers in the config the plugin is registered in.
func (in *Installer) mcpTarget() mcpTarget {
	switch in.Harness {
	case "claude-code":
		if in.Scope == ScopeUser {
			return mcpTarget{Path: filepath.Join(in.Home, ".claude.json"), Servers: []any{"mcpServers"}}
		}
		return mcpTarget{Path: filepath.Join(in.Project, ".mcp.json"), Servers: []any{"mcpServers"}}
	case "codex":
		if in.Scope == ScopeUser {
			return mcpTarget{Path: in.codexConfigPath(), TOML: true, Servers: []any{"mcp_servers"}}
		}
		dir := filepath.Join(in.Project, ".codex")
		return mcpTarget{Path: filepath.Join(dir, "config.toml"), TOML: true, Servers: []any{"mcp_servers"}, Prune: []string{dir}}
	case "gemini":
		return mcpTarget{Path: in.configPath(), Servers: []any{"mcpServers"}, Shared: true}
	case "opencode":
		dir, names := in.Project, []string{"opencode.json", "opencode.jsonc", ".opencode/opencode.json", ".opencode/opencode.jsonc"}
		if in.Scope == ScopeUser {
			dir, names = filepath.Join(in.Home, ".config", "opencode"), names[:2]
		}
		path := filepath.Join(dir, names[0])
		for _, n := range names {
			if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
				path = filepath.Join(dir, n)
				break
			}
		}
		return mcpTarget{Path: path, Servers: []any{"mcp"}}
	case "openclaw":
		return mcpTarget{Path: in.openClawRegistrationPath(), Dialect: configedit.JSON5, Servers: []any{"mcp", "servers"}, Shared: true}
	}
	return mcpTarget{}
}

// openClawRegistrationPath is the OpenClaw config install registers the
// plugin (and the MCP server) in.
func (in *Installer) openClawRegistrationPath() string {
	if p := in.Env("OPENCLAW_CONFIG_PATH"); p != "" {
		return p
	}
	return filepath.Join(in.Home, ".openclaw", "openclaw.json")
}

// mcpCommand is the binary the MCP server entry runs: memvault from PATH at
// project scope, the way the hooks run it (the file is the team's, and
// names no machine path), the binary that installed it at user scope.
func (in *Installer) mcpCommand() string {
	if in.Scope == ScopeProject {
		return "memvault"
	}
	return in.Bin
}

// mcpEntry is memvault's server entry in the harness's own shape. Nothing
// locates the vault: the harness starts the server in the folder it works
// in, where the hooks find the vault from the payload's cwd; OpenClaw's
// runs wherever OpenClaw does, so at project scope the entry names the
// project's folder (as the plugin finds the project from where it lies).
// The server is told its harness, which the rows it records carry, as a
// hook's do.
func (in *Installer) mcpEntry() configedit.Obj {
	cmd, args := in.mcpCommand(), []any{"mcp", "--harness", in.Harness}
	switch in.Harness {
	case "claude-code":
		return configedit.Obj{{Key: "type", Value: "stdio"}, {Key: "command", Value: cmd}, {Key: "args", Value: args}}
	case "opencode":
		return configedit.Obj{{Key: "type", Value: "local"}, {Key: "command", Value: append([]any{cmd}, args...)}}
	case "openclaw":
		e := configedit.Obj{{Key: "command", Value: cmd}, {Key: "args", Value: args}}
		if in.Scope == ScopeProject {
			e = append(e, configedit.Field{Key: "cwd", Value: in.Project})
		}
		return e
	}
	return configedit.Obj{{Key: "command", Value: cmd}, {Key: "args", Value: args}}
}

// mcpArgv is an entry's command line as the harness runs it: the command
// and its arguments (OpenCode's command is the whole list).
func (in *Installer) mcpArgv(v any) []string {
	m, _ := v.(map[string]any)
	var raw []any
	if in.Harness == "opencode" {
		raw, _ = m["command"].([]any)
	} else if cmd, ok := m["command"].(string); ok {
		args, _ := m["args"].([]any)
		raw = append([]any{cmd}, args...)
	}
	out := make([]string, 0, len(raw))
	for _, x := range raw {
		s, ok := x.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// mcpOurs reports whether an entry named memvault is memvault's own: it
// runs a memvault binary (one of that name, or this one) with the argument
// mcp, and at most this harness's name after --harness (what install
// writes; an entry of an earlier install has mcp alone). Anything else
// under the name is the user's: install and uninstall leave it as it is,
// and say so.
func (in *Installer) mcpOurs(v any) bool {
	argv := in.mcpArgv(v)
	switch {
	case len(argv) == 2 && argv[1] == "mcp":
	case len(argv) == 4 && argv[1] == "mcp" && argv[2] == "--harness" && argv[3] == in.Harness:
	default:
		return false
	}
	bin := argv[0]
	return filepath.Base(bin) == "memvault" || bin == in.Bin || sameFile(installedBinary(bin), in.Bin)
}

// mcpForeign is the warning about a user's own entry named memvault.
func (in *Installer) mcpForeign(path string, v any, remove bool) string {
	argv := strings.Join(in.mcpArgv(v), " ")
	if argv == "" {
		argv = "no command memvault recognises"
	}
	if remove {
		return fmt.Sprintf("%s: the MCP server %q is not memvault's (it runs %s): left as it is", path, mcpName, argv)
	}
	return fmt.Sprintf("%s: an MCP server named %q is there already and is not memvault's (it runs %s): left as it is, so memvault's MCP server is not registered; rename or remove that entry, then install again (docs/MCP.md, \"Harnesses\")", path, mcpName, argv)
}

// editMCPJSON registers (or removes) memvault's server in a JSON config
// being edited: added when missing, its command (and OpenClaw's folder)
// updated in place when it is memvault's (fields the user added to it
// kept), taken out whole on uninstall with the containers that held only
// it. It returns a warning when the name is taken by the user's own
// server.
func (in *Installer) editMCPJSON(e *configedit.Editor, t mcpTarget, remove bool) (string, error) {
	for i := 1; i <= len(t.Servers); i++ {
		if n, err := e.Find(t.Servers[:i]...); err != nil {
			return "", err
		} else if n != nil && n.Kind != configedit.Object {
			return "", fmt.Errorf("%q is not an object", dotted(t.Servers[:i]))
		}
	}
	path := append(append([]any{}, t.Servers...), mcpName)
	entry, err := e.Find(path...)
	switch {
	case err != nil:
		return "", err
	case entry == nil && remove:
		return "", nil
	case entry == nil:
		return "", setDeep(e, t.Servers, mcpName, in.mcpEntry())
	case !in.mcpOurs(e.Value(path...)):
		return in.mcpForeign(t.Path, e.Value(path...), remove), nil
	case remove:
		if err := e.Delete(t.Servers, mcpName); err != nil {
			return "", err
		}
		for i := len(t.Servers); i >= 1; i-- {
			n, _ := e.Find(t.Servers[:i]...)
			if n == nil || len(n.Members) > 0 {
				break
			}
			if err := e.Delete(t.Servers[:i-1], t.Servers[i-1].(string)); err != nil {
				return "", err
			}
		}
		return "", nil
	}
	cmdPath := append(append([]any{}, path...), "command")
	if in.Harness == "opencode" {
		cmdPath = append(cmdPath, 0)
	}
	if err := e.Replace(cmdPath, in.mcpCommand()); err != nil {
		return "", err
	}
	if in.Harness == "openclaw" && in.Scope == ScopeProject {
		if cwd, _ := e.Value(append(append([]any{}, path...), "cwd")...).(string); cwd != in.Project {
			return "", e.Set(path, "cwd", in.Project)
		}
	}
	return "", nil
}

// editMCPTOML does the same in Codex's config.toml.
func (in *Installer) editMCPTOML(d *configedit.TOML, path string, remove bool) (string, error) {
	key := []string{"mcp_servers", mcpName}
	v := d.Value(key...)
	switch {
	case v == nil && remove:
		return "", nil
	case v == nil:
		return "", d.AppendTable(key, in.mcpEntry())
	case !in.mcpOurs(v):
		return in.mcpForeign(path, v, remove), nil
	case remove:
		return "", d.DeleteTable(key)
	}
	return "", d.SetString(append(key, "command"), in.mcpCommand())
}

// planMCP plans the registration (or removal) of memvault's MCP server in
// a file of its own (not the hooks' file).
func (in *Installer) planMCP(remove bool) (Change, error) {
	t := in.mcpTarget()
	link := t.Path
	path := realPath(link)
	old, err := os.ReadFile(path)
	exists := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist) && remove:
		return Change{Path: path, Action: "unchanged", Note: "no such file"}, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return Change{}, fmt.Errorf("%s: read %s: %w", verb(remove), path, err)
	}
	var c Change
	if t.TOML {
		d, err := configedit.NewTOML(old)
		if err != nil {
			return Change{}, configError(remove, path, err)
		}
		warning, err := in.editMCPTOML(d, path, remove)
		if err != nil {
			return Change{}, configError(remove, path, err)
		}
		data, err := d.Bytes()
		if err != nil {
			return Change{}, configError(remove, path, err)
		}
		switch {
		case exists && bytes.Equal(data, old):
			c = Change{Path: path, Action: "unchanged"}
		case remove && d.Empty():
			c = Change{Path: path, Action: "remove", Old: old, Note: "held only memvault's entries"}
		default:
			c = Change{Path: path, Action: "write", Content: data, Old: old}
		}
		c.Warning = warning
	} else {
		e, err := configedit.New(old, t.Dialect)
		if err != nil {
			return Change{}, configError(remove, path, err)
		}
		warning, err := in.editMCPJSON(e, t, remove)
		if err != nil {
			return Change{}, configError(remove, path, err)
		}
		if c, err = finish(e, path, old, exists, remove); err != nil {
			return Change{}, err
		}
		c.Warning = warning
	}
	if c.Action == "remove" && path != link {
		c.Action, c.Content = "write", []byte{} // a link's target stays, so the link does not dangle
		if !t.TOML {
			c.Content = []byte("{}")
		}
	}
	c.Prune = t.Prune
	if !remove && c.Action == "write" && in.Harness == "claude-code" && in.Scope == ScopeProject {
		c.Note = "Claude Code asks once before it starts a project's MCP servers: approve memvault when it asks (claude -p starts them without asking); memvault doctor checks it"
	}
	return c, nil
}
