package hooks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/memvault/memvault/vault/configedit"
)

// openClawEntry is memvault's entry under plugins.entries.
var openClawEntry = configedit.Obj{{Key: "enabled", Value: true},
	{Key: "hooks", Value: configedit.Obj{{Key: "allowConversationAccess", Value: true}}}}

// planOpenClaw writes the plugin folder and registers it in OpenClaw's
// JSON5 config ($OPENCLAW_CONFIG_PATH, else ~/.openclaw/openclaw.json).
func (in *Installer) planOpenClaw(remove bool) ([]Change, error) {
	dir := in.configPath()
	var out []Change
	for _, f := range []string{"index.js", "package.json", "openclaw.plugin.json"} {
		cs, err := in.planFile(remove, "plugins/openclaw/"+f, filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		for i := range cs {
			cs[i].Prune = []string{dir} // the plugin folder, once empty
			if in.Scope == ScopeProject {
				cs[i].Prune = append(cs[i].Prune, filepath.Dir(dir), filepath.Dir(filepath.Dir(dir)))
			}
		}
		out = append(out, cs...)
	}
	cfgPath := in.Env("OPENCLAW_CONFIG_PATH")
	if cfgPath == "" {
		cfgPath = filepath.Join(in.Home, ".openclaw", "openclaw.json")
	}
	cfgPath = realPath(cfgPath)
	old, err := os.ReadFile(cfgPath)
	exists := err == nil
	switch {
	case errors.Is(err, fs.ErrNotExist) && remove:
		return append(out, Change{Path: cfgPath, Action: "unchanged", Note: "no such file"}), nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: read %s: %w", verb(remove), cfgPath, err)
	}
	e, err := configedit.New(old, configedit.JSON5)
	if err != nil {
		return nil, configError(remove, cfgPath, err)
	}
	if remove {
		err = unregisterOpenClaw(e, dir)
	} else {
		err = registerOpenClaw(e, dir)
	}
	if err != nil {
		return nil, configError(remove, cfgPath, err)
	}
	warning := ""
	if !in.NoMCP {
		if warning, err = in.editMCPJSON(e, in.mcpTarget(), remove); err != nil {
			return nil, configError(remove, cfgPath, err)
		}
	}
	c, err := finish(e, cfgPath, old, exists, remove)
	if err != nil {
		return nil, err
	}
	c.Warning = warning
	c.Prune = []string{filepath.Dir(cfgPath)} // ~/.openclaw, when install made it for the config
	return append(out, c), nil
}

// registerOpenClaw adds the plugin folder to plugins.load.paths, enables
// memvault's entry (keeping what the user set in it), and joins an
// allowlist when there is one. An allowlist means only the plugins it
// names load: one is never added where there was none (that would switch
// off the user's other plugins).
func registerOpenClaw(e *configedit.Editor, dir string) error {
	for _, step := range [][]any{{"plugins"}, {"plugins", "load"}, {"plugins", "entries"}} {
		if n, err := e.Find(step...); err != nil {
			return err
		} else if n != nil && n.Kind != configedit.Object {
			return fmt.Errorf("%q is not an object", dotted(step))
		}
	}
	if err := addString(e, []any{"plugins", "load", "paths"}, dir, true); err != nil {
		return err
	}
	if err := addString(e, []any{"plugins", "allow"}, "memvault", false); err != nil {
		return err
	}
	entry, err := e.Find("plugins", "entries", "memvault")
	switch {
	case err != nil:
		return err
	case entry == nil:
		return setDeep(e, []any{"plugins", "entries"}, "memvault", openClawEntry)
	case entry.Kind != configedit.Object:
		return errors.New(`"plugins.entries.memvault" is not an object`)
	}
	if on, _ := entry.Get("enabled"); on == nil || on.Str != "true" {
		if err := e.Set([]any{"plugins", "entries", "memvault"}, "enabled", true); err != nil {
			return err
		}
	}
	hooks, err := e.Find("plugins", "entries", "memvault", "hooks")
	switch {
	case err != nil:
		return err
	case hooks == nil || hooks.Kind != configedit.Object:
		return e.Set([]any{"plugins", "entries", "memvault"}, "hooks", openClawEntry[1].Value)
	}
	if a, _ := hooks.Get("allowConversationAccess"); a == nil || a.Str != "true" {
		return e.Set([]any{"plugins", "entries", "memvault", "hooks"}, "allowConversationAccess", true)
	}
	return nil
}

// dotted writes a path of keys as "a.b.c".
func dotted(path []any) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

// addString appends s to the array at path unless it is there; create
// makes the array (and the objects above it) when missing.
func addString(e *configedit.Editor, path []any, s string, create bool) error {
	arr, err := e.Find(path...)
	switch {
	case err != nil:
		return err
	case arr == nil && create:
		return setDeep(e, path[:len(path)-1], path[len(path)-1].(string), []any{s})
	case arr == nil || arr.Kind != configedit.Array:
		return nil
	}
	for _, x := range arr.Elems {
		if x.Kind == configedit.String && x.Str == s {
			return nil
		}
	}
	return e.Append(path, s)
}

// setDeep sets key in the object at path, creating the missing objects of
// path on the way.
func setDeep(e *configedit.Editor, path []any, key string, v any) error {
	for i := len(path); i >= 0; i-- {
		n, err := e.Find(path[:i]...)
		if err != nil {
			return err
		}
		if n == nil {
			continue
		}
		for j := len(path) - 1; j >= i; j-- {
			v = configedit.Obj{{Key: key, Value: v}}
			key = path[j].(string)
		}
		return e.Set(path[:i], key, v)
	}
	return errors.New("no object to add to")
}

// unregisterOpenClaw takes memvault out of the config: its folder from
// plugins.load.paths, its name from the allowlist (which stays, even
// empty: install never makes one), its entry; and the containers it
// emptied.
func unregisterOpenClaw(e *configedit.Editor, dir string) error {
	// emptied deletes the container at path when memvault's removals left
	// it empty; one that was empty before stays.
	emptied := func(path ...any) error {
		n, _ := e.Find(path...)
		if n != nil && (n.Kind == configedit.Object && len(n.Members) == 0 || n.Kind == configedit.Array && len(n.Elems) == 0) {
			return e.Delete(path[:len(path)-1], path[len(path)-1])
		}
		return nil
	}
	removedPath, err := removeString(e, []any{"plugins", "load", "paths"}, dir)
	if err != nil {
		return err
	}
	if removedPath {
		if err := emptied("plugins", "load", "paths"); err != nil {
			return err
		}
		if err := emptied("plugins", "load"); err != nil {
			return err
		}
	}
	removedAllow, err := removeString(e, []any{"plugins", "allow"}, "memvault")
	if err != nil {
		return err
	}
	entry, err := e.Find("plugins", "entries", "memvault")
	if err != nil {
		return err
	}
	if entry != nil {
		if err := e.Delete([]any{"plugins", "entries"}, "memvault"); err != nil {
			return err
		}
		if err := emptied("plugins", "entries"); err != nil {
			return err
		}
	}
	if removedPath || removedAllow || entry != nil {
		return emptied("plugins")
	}
	return nil
}

// removeString removes every s from the array at path.
func removeString(e *configedit.Editor, path []any, s string) (bool, error) {
	arr, err := e.Find(path...)
	if err != nil || arr == nil || arr.Kind != configedit.Array {
		return false, err
	}
	removed := false
	for i := len(arr.Elems) - 1; i >= 0; i-- {
		if x := arr.Elems[i]; x.Kind == configedit.String && x.Str == s {
			if err := e.Delete(path, i); err != nil {
				return false, err
			}
			removed = true
		}
	}
	return removed, nil
}
