package hooks

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/memvault/memvault/vault/configedit"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

//go:embed plugins
var plugins embed.FS

// Scope says where an installer writes: the project (the repository around
// the working directory) or the user's home.
type Scope string

// The install scopes.
const (
	ScopeProject Scope = "project"
	ScopeUser    Scope = "user"
)

// Installer changes one harness's configuration so that it calls memvault.
type Installer struct {
	Harness string
	Scope   Scope
	Project string // the project root
	Home    string // the user's home
	Bin     string // the memvault binary the hooks run
	Env     func(string) string
	// NoMCP leaves the harness's MCP servers alone: memvault's is neither
	// registered nor removed (--no-mcp).
	NoMCP bool
}

// Change is one file an install or uninstall writes or removes.
type Change struct {
	Path    string `json:"path"`
	Action  string `json:"action"` // write, remove, unchanged
	Content []byte `json:"-"`      // what a write writes
	Old     []byte `json:"-"`      // what the file holds now (nil: no file)
	Note    string `json:"note,omitempty"`
	// Warning is what was left undone, and why: a user's own MCP server
	// under memvault's name.
	Warning string `json:"warning,omitempty"`
	// Prune lists folders a remove takes away too when it leaves them
	// empty, deepest first: the ones install made for the file.
	Prune []string `json:"-"`
}

// hookEvents lists, per harness with a JSON hook config, the native events
// memvault wires and the runtime event each calls.
var hookEvents = map[string][][2]string{
	"claude-code": {{"SessionStart", "session-start"}, {"UserPromptSubmit", "prompt-submit"}, {"Stop", "stop"},
		{"PreCompact", "pre-compaction"}, {"PostCompact", "compaction-complete"}, {"SessionEnd", "session-end"}},
	"codex": {{"SessionStart", "session-start"}, {"UserPromptSubmit", "prompt-submit"}, {"Stop", "stop"},
		{"PreCompact", "pre-compaction"}, {"PostCompact", "compaction-complete"}, {"SessionEnd", "session-end"}},
	"gemini": {{"SessionStart", "session-start"}, {"BeforeAgent", "prompt-submit"}, {"AfterAgent", "stop"},
		{"PreCompress", "pre-compaction"}, {"SessionEnd", "session-end"}},
}

// configPath is where a harness keeps the file memvault edits.
func (in *Installer) configPath() string {
	base := in.Project
	if in.Scope == ScopeUser {
		base = in.Home
	}
	switch in.Harness {
	case "claude-code":
		return filepath.Join(base, ".claude", "settings.json")
	case "codex":
		if in.Scope == ScopeUser {
			if ch := in.Env("CODEX_HOME"); ch != "" {
				return filepath.Join(ch, "hooks.json")
			}
		}
		return filepath.Join(base, ".codex", "hooks.json")
	case "gemini":
		return filepath.Join(base, ".gemini", "settings.json")
	case "opencode":
		if in.Scope == ScopeUser {
			return filepath.Join(base, ".config", "opencode", "plugins", "memvault.js")
		}
		return filepath.Join(base, ".opencode", "plugins", "memvault.js")
	case "openclaw":
		return filepath.Join(base, ".openclaw", "plugins", "memvault")
	}
	return ""
}

// The hook commands. At project scope the files are committed and shared:
// the command runs memvault from PATH, and does nothing (exit 0, no output)
// where it is not installed. At user scope the file is the person's own:
// the command pins the binary that installed it, guarded the same way.
const (
	guardPATH = "command -v memvault >/dev/null 2>&1 && "
	guardTail = " || true"
)

// command is the hook command line for a runtime event.
func (in *Installer) command(event string) string {
	if in.Scope == ScopeProject {
		return guardPATH + "memvault hook " + in.Harness + " " + event + guardTail
	}
	q := shellQuote(in.Bin)
	return "test -x " + q + " && " + q + " hook " + in.Harness + " " + event + guardTail
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellWord reads one word of s the way shellQuote writes it (plain, or in
// single quotes, where a quote closes them, adds \' and opens them again)
// and returns it and the rest.
func shellWord(s string) (word, rest string, ok bool) {
	var b strings.Builder
	for len(s) > 0 && s[0] != ' ' {
		switch {
		case s[0] == '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", "", false
			}
			b.WriteString(s[1 : 1+end])
			s = s[2+end:]
		case strings.HasPrefix(s, `\'`):
			b.WriteByte('\'')
			s = s[2:]
		default:
			b.WriteByte(s[0])
			s = s[1:]
		}
	}
	return b.String(), s, b.Len() > 0
}

// parseCommand reads a hook command memvault wrote, in any of its forms:
// "<bin> hook <harness> <event>" (before the guard), the PATH form and the
// pinned form above. It returns the binary as written and the harness and
// event.
func parseCommand(command string) (bin, harness, event string, ok bool) {
	c := strings.TrimSpace(command)
	guarded, pinned := false, ""
	if rest, found := strings.CutPrefix(c, guardPATH); found {
		c, guarded = rest, true
	} else if rest, found := strings.CutPrefix(c, "test -x "); found {
		word, after, ok := shellWord(rest)
		if !ok || !strings.HasPrefix(after, " && ") {
			return "", "", "", false
		}
		c, guarded, pinned = after[len(" && "):], true, word
	}
	if guarded {
		var found bool
		if c, found = strings.CutSuffix(c, guardTail); !found {
			return "", "", "", false
		}
	}
	bin, rest, ok := shellWord(c)
	if !ok {
		return "", "", "", false
	}
	fields := strings.Split(rest, " ")
	if len(fields) != 4 || fields[0] != "" || fields[1] != "hook" {
		return "", "", "", false
	}
	if guarded && (pinned == "" && bin != "memvault" || pinned != "" && bin != pinned) {
		return "", "", "", false // the guard checks another binary than the one run
	}
	return bin, fields[2], fields[3], true
}

// isOurs recognises a hook command memvault installed for harness, in any
// form and with any binary path, so a reinstall replaces an older one.
func isOurs(command, harness string) bool {
	_, h, event, ok := parseCommand(command)
	if !ok || h != harness {
		return false
	}
	for _, e := range Events {
		if event == string(e) {
			return true
		}
	}
	return false
}

// installedBinary is the binary an installed hook command or plugin runs:
// a bare name is looked up on PATH (as the harness will), and stays bare
// when it is not there.
func installedBinary(bin string) string {
	if bin != "" && !strings.Contains(bin, "/") {
		if p, err := exec.LookPath(bin); err == nil {
			return p
		}
	}
	return bin
}

// commandBinary is the binary of an installed hook command ("" when it is
// not memvault's).
func commandBinary(command string) string {
	bin, _, _, ok := parseCommand(command)
	if !ok {
		return ""
	}
	return installedBinary(bin)
}

// pluginBinary is the binary a plugin file memvault wrote runs ("" when
// it names none).
func pluginBinary(data []byte) string {
	s, err := strconv.Unquote(pluginBinLiteral(data))
	if err != nil {
		return ""
	}
	return installedBinary(s)
}

// Plan computes the changes of an install (or, with remove, an uninstall)
// without writing anything.
func (in *Installer) Plan(remove bool) ([]Change, error) {
	if _, ok := Lookup(in.Harness); !ok {
		return nil, fmt.Errorf("install: unknown harness %q (want one of %s)", in.Harness, strings.Join(Names(), ", "))
	}
	var changes []Change
	var err error
	switch in.Harness {
	case "opencode":
		changes, err = in.planFile(remove, "plugins/opencode/memvault.js", in.configPath())
	case "openclaw":
		changes, err = in.planOpenClaw(remove)
	default:
		changes, err = in.planJSONHooks(remove)
	}
	if err != nil || in.NoMCP || in.mcpTarget().Shared {
		return changes, err
	}
	c, err := in.planMCP(remove)
	if err != nil {
		return nil, err
	}
	return append(changes, c), nil
}

func verb(remove bool) string {
	if remove {
		return "uninstall"
	}
	return "install"
}

// realPath follows a link at path (a dotfiles manager's), so that the
// edit goes to the file the link names and the link stays.
func realPath(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return path
}

// configError is the one line a config memvault will not edit gets.
func configError(remove bool, path string, err error) error {
	what := "add memvault's entries by hand"
	if remove {
		what = "remove memvault's entries by hand"
	}
	return fault.New(fault.ErrInvalid, "%s: %s: %v; fix the file, or %s (docs/HARNESSES.md)", verb(remove), path, err, what)
}

// finish turns the edited config into its change: unchanged, written, or
// removed when nothing but what memvault added was in it.
func finish(e *configedit.Editor, path string, old []byte, exists, remove bool) (Change, error) {
	data, err := e.Bytes()
	if err != nil {
		return Change{}, configError(remove, path, err)
	}
	switch {
	case exists && bytes.Equal(data, old):
		return Change{Path: path, Action: "unchanged"}, nil
	case remove && e.Empty():
		return Change{Path: path, Action: "remove", Old: old, Note: "held only memvault's entries"}, nil
	}
	return Change{Path: path, Action: "write", Content: data, Old: old}, nil
}

// planJSONHooks edits memvault's hooks into (or out of) a Claude Code,
// Codex or Gemini CLI settings file, as text: nothing else in the file
// changes, a second install changes nothing, memvault's own entries are
// updated in place (fields the user added to them kept), and an uninstall
// after an install gives back the file's bytes.
func (in *Installer) planJSONHooks(remove bool) ([]Change, error) {
	link := in.configPath()
	path := realPath(link)
	old, err := os.ReadFile(path)
	exists := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist) && remove:
		return []Change{{Path: path, Action: "unchanged", Note: "no such file"}}, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: read %s: %w", verb(remove), path, err)
	}
	e, err := configedit.New(old, configedit.JSONC)
	if err != nil {
		return nil, configError(remove, path, err)
	}
	if n, err := e.Find("hooks"); err != nil {
		return nil, configError(remove, path, err)
	} else if n != nil && n.Kind != configedit.Object {
		return nil, configError(remove, path, errors.New(`"hooks" is not an object`))
	}
	removed := false
	for _, pair := range hookEvents[in.Harness] {
		r, err := in.editEvent(e, pair[0], pair[1], remove)
		if err != nil {
			return nil, configError(remove, path, err)
		}
		removed = removed || r
	}
	if n, _ := e.Find("hooks"); removed && n != nil && len(n.Members) == 0 {
		if err := e.Delete(nil, "hooks"); err != nil {
			return nil, configError(remove, path, err)
		}
	}
	warning := ""
	if t := in.mcpTarget(); t.Shared && !in.NoMCP {
		if warning, err = in.editMCPJSON(e, t, remove); err != nil {
			return nil, configError(remove, path, err)
		}
	}
	c, err := finish(e, path, old, exists, remove)
	if err != nil {
		return nil, err
	}
	c.Warning = warning
	if c.Action == "remove" && path != link {
		// a link's target stays, emptied, so the link does not dangle
		data, _ := e.Bytes()
		c.Action, c.Content = "write", data
	}
	if in.Scope == ScopeProject {
		c.Prune = []string{filepath.Dir(path)}
	}
	if in.Harness == "codex" && !remove && c.Action == "write" {
		c.Note = "Codex runs only hooks the user trusts: start codex, open /hooks and trust the memvault hooks; memvault doctor --scope user checks it (see docs/HARNESSES.md)"
		if in.Scope == ScopeProject {
			c.Note = "Codex reads a project's .codex/ only when the project is trusted, and runs only hooks the user trusts: trust the project when codex asks, then open /hooks and trust the memvault hooks; memvault doctor checks both (see docs/HARNESSES.md)"
		}
	}
	return []Change{c}, nil
}

// editEvent wires (or unwires) one native event. memvault's entry found
// in a group is updated in place: only its command changes. It reports
// whether it removed an event's last group.
func (in *Installer) editEvent(e *configedit.Editor, native, event string, remove bool) (bool, error) {
	arrPath := []any{"hooks", native}
	arr, err := e.Find(arrPath...)
	if err != nil {
		return false, err
	}
	if arr != nil && arr.Kind != configedit.Array {
		return false, fmt.Errorf(`"hooks.%s" is not an array`, native)
	}
	ours := in.findOurs(arr)
	had := len(ours) > 0
	if !remove && had {
		first := ours[0]
		if err := e.Replace(append(arrPath, first[0], "hooks", first[1], "command"), in.command(event)); err != nil {
			return false, err
		}
		ours = ours[1:] // a duplicate of memvault's entry goes
	}
	for i := len(ours) - 1; i >= 0; i-- {
		gi, hi := ours[i][0], ours[i][1]
		grp, _ := e.Find(append(arrPath, gi, "hooks")...)
		if len(grp.Elems) == 1 {
			err = e.Delete(arrPath, gi) // the group held only memvault's hook
		} else {
			err = e.Delete(append(arrPath, gi, "hooks"), hi)
		}
		if err != nil {
			return false, err
		}
	}
	if remove {
		if arr, _ = e.Find(arrPath...); had && arr != nil && len(arr.Elems) == 0 {
			return true, e.Delete([]any{"hooks"}, native)
		}
		return false, nil
	}
	if had {
		return false, nil
	}
	group := in.group(native, event)
	switch hooksObj, _ := e.Find("hooks"); {
	case hooksObj == nil:
		return false, e.Set(nil, "hooks", configedit.Obj{{Key: native, Value: []any{group}}})
	case arr == nil:
		return false, e.Set([]any{"hooks"}, native, []any{group})
	}
	return false, e.Append(arrPath, group)
}

// findOurs lists memvault's hook entries in an event's groups, as
// [group, hook] indexes in file order.
func (in *Installer) findOurs(arr *configedit.Node) [][2]int {
	if arr == nil || arr.Kind != configedit.Array {
		return nil
	}
	var out [][2]int
	for gi, g := range arr.Elems {
		hs, _ := g.Get("hooks")
		if hs == nil || hs.Kind != configedit.Array {
			continue
		}
		for hi, h := range hs.Elems {
			if cmd, _ := h.Get("command"); cmd != nil && cmd.Kind == configedit.String && isOurs(cmd.Str, in.Harness) {
				out = append(out, [2]int{gi, hi})
			}
		}
	}
	return out
}

// group is the hook group memvault adds for a native event.
func (in *Installer) group(native, event string) configedit.Obj {
	hook := configedit.Obj{{Key: "type", Value: "command"}, {Key: "command", Value: in.command(event)}}
	if in.Harness == "codex" && native == "SessionEnd" {
		hook = append(hook, configedit.Field{Key: "timeout", Value: 3}) // Codex allows session end at most 3 s
	}
	group := configedit.Obj{{Key: "hooks", Value: []any{hook}}}
	if in.Harness == "gemini" {
		group = append(configedit.Obj{{Key: "matcher", Value: "*"}}, group...)
	}
	return group
}

// planFile writes (or removes) one plugin file. At project scope the file
// names no machine path: it runs memvault from PATH and finds the project
// from where it lies; at user scope it pins the binary.
func (in *Installer) planFile(remove bool, src, dst string) ([]Change, error) {
	old, err := os.ReadFile(dst)
	exists := err == nil
	var prune []string
	if in.Scope == ScopeProject {
		prune = []string{filepath.Dir(dst), filepath.Dir(filepath.Dir(dst))}
	}
	if remove {
		if !exists {
			return []Change{{Path: dst, Action: "unchanged", Note: "no such file"}}, nil
		}
		if !bytes.Contains(old, []byte("memvault")) {
			return nil, fault.New(fault.ErrInvalid, "uninstall: %s was not written by memvault; leaving it", dst)
		}
		return []Change{{Path: dst, Action: "remove", Old: old, Prune: prune}}, nil
	}
	data, err := in.renderPlugin(src, "")
	if err != nil {
		return nil, err
	}
	if exists && bytes.Equal(old, data) {
		return []Change{{Path: dst, Action: "unchanged"}}, nil
	}
	return []Change{{Path: dst, Action: "write", Content: data, Old: old}}, nil
}

// renderPlugin is the plugin file src as install writes it: the binary
// its hooks run written as binLiteral (a JavaScript string literal), or,
// when that is "", as install would (this memvault at user scope,
// "memvault" from PATH at project scope).
func (in *Installer) renderPlugin(src, binLiteral string) ([]byte, error) {
	data, err := plugins.ReadFile(src)
	if err != nil {
		return nil, err
	}
	if binLiteral == "" {
		bin := "memvault"
		if in.Scope == ScopeUser {
			bin = in.Bin
		}
		binLiteral = strconv.Quote(bin)
	}
	data = bytes.ReplaceAll(data, []byte("__MEMVAULT_BIN__"), []byte(binLiteral))
	return bytes.ReplaceAll(data, []byte("__MEMVAULT_PROJECT_SCOPE__"), []byte(strconv.FormatBool(in.Scope == ScopeProject))), nil
}

// Apply carries out planned changes. Whole files are replaced atomically,
// and a file that exists keeps its mode: the harness's configuration is the
// user's, who may have made it private.
func Apply(changes []Change) error {
	for _, c := range changes {
		switch c.Action {
		case "write":
			if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
				return err
			}
			if err := fileio.WriteKeepMode(c.Path, c.Content, 0o644); err != nil {
				return err
			}
		case "remove":
			if err := os.Remove(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			for _, dir := range c.Prune {
				if os.Remove(dir) != nil { // not empty (or gone): it and those above stay
					break
				}
			}
		}
	}
	return nil
}
