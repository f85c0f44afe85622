package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memvault/memvault/vault/configedit"
)

// OpenClaw loads memvault's plugin when its config ($OPENCLAW_CONFIG_PATH,
// else ~/.openclaw/openclaw.json) lists the plugin's folder in
// plugins.load.paths, enables plugins.entries.memvault with conversation
// access, does not deny it, and, when it has an allowlist (plugins.allow),
// names it there: an allowlist means only the plugins it names load.
//
// A running Gateway (OpenClaw 2026.9.6) hot-reloads its plugins when the
// config's plugins.* change (reload mode "hybrid", the default), but not
// when a plugin's own files change: a reinstall that rewrote only the
// plugin needs `openclaw plugins reload memvault` or a Gateway restart,
// and with gateway.reload.mode "off" every change waits for a restart. The
// Gateway records itself in $OPENCLAW_STATE_DIR/tmp/openclaw-<uid>/
// gateway.state.lock (JSON: pid, createdAt, configPath, startTime); doctor
// reads it and compares its start, and the config's last change, with the
// plugin files' modification times. `openclaw agent --local` needs no
// Gateway: it loads the plugins afresh on every run.

// openClawConfigPath is the OpenClaw config memvault registers its plugin in.
func (in *Installer) openClawConfigPath() string {
	if p := in.Env("OPENCLAW_CONFIG_PATH"); p != "" {
		return in.expandHome(p)
	}
	return filepath.Join(in.Home, ".openclaw", "openclaw.json")
}

// openClawStateDir is OpenClaw's state folder, where a running Gateway
// keeps its lock.
func (in *Installer) openClawStateDir() string {
	if p := strings.TrimSpace(in.Env("OPENCLAW_STATE_DIR")); p != "" {
		return in.expandHome(p)
	}
	return filepath.Join(in.Home, ".openclaw")
}

func (in *Installer) expandHome(p string) string {
	if p == "~" {
		return in.Home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(in.Home, rest)
	}
	return p
}

// readOpenClawConfig parses OpenClaw's config, JSON5 as OpenClaw reads it;
// a config it cannot read is reported as such.
func readOpenClawConfig(data []byte) (map[string]any, error) {
	doc := map[string]any{}
	if err := configedit.Decode(data, configedit.JSON5, &doc); err != nil {
		return nil, fmt.Errorf("not JSON5 (%v)", err)
	}
	return doc, nil
}

// openClawRegistration adds to w what stops OpenClaw from loading the
// plugin memvault installed in w.Config, or from running its current
// files.
func (in *Installer) openClawRegistration(w *Wiring) {
	dir := w.Config
	cfg := in.openClawConfigPath()
	data, err := os.ReadFile(cfg)
	if errors.Is(err, fs.ErrNotExist) {
		w.fail("OpenClaw's config "+cfg+" does not exist, so nothing registers memvault's plugin", in.installCommand())
		return
	}
	var doc map[string]any
	if err == nil {
		doc, err = readOpenClawConfig(data)
	}
	if err != nil {
		w.fail("cannot read OpenClaw's config "+cfg+": "+oneLine(err.Error()),
			"check by hand that plugins.load.paths holds "+dir+" and plugins.entries.memvault is enabled (docs/HARNESSES.md)")
		return
	}
	pl, _ := doc["plugins"].(map[string]any)
	if on, ok := pl["enabled"].(bool); ok && !on {
		w.fail("OpenClaw's plugins are switched off (plugins.enabled is false in "+cfg+")", "set plugins.enabled to true in "+cfg)
	}
	load, _ := pl["load"].(map[string]any)
	if !in.listsPath(load["paths"], dir) {
		w.fail("plugins.load.paths in "+cfg+" does not hold memvault's plugin folder "+dir+", so OpenClaw does not load it", in.installCommand())
	}
	if hasString(pl["deny"], "memvault") {
		w.fail("plugins.deny in "+cfg+" names memvault, so OpenClaw does not load it (deny wins over allow)", `remove "memvault" from plugins.deny in `+cfg)
	}
	if allow, ok := pl["allow"].([]any); ok && !hasString(allow, "memvault") {
		w.fail("plugins.allow in "+cfg+" does not name memvault, and OpenClaw loads only the plugins an allowlist names",
			`add "memvault" to plugins.allow in `+cfg+" ("+in.installCommand()+" does)")
	}
	entries, _ := pl["entries"].(map[string]any)
	entry, ok := entries["memvault"].(map[string]any)
	switch {
	case !ok:
		w.fail("plugins.entries.memvault is missing in "+cfg+": the plugin is neither enabled nor given the conversation", in.installCommand())
	case entry["enabled"] == false:
		w.fail("memvault's plugin is switched off (plugins.entries.memvault.enabled is false in "+cfg+")", "set it to true, or "+in.installCommand())
	default:
		hooks, _ := entry["hooks"].(map[string]any)
		if hooks["allowConversationAccess"] != true {
			w.fail("plugins.entries.memvault.hooks.allowConversationAccess is not true in "+cfg+": OpenClaw withholds the prompts and replies memvault stores",
				in.installCommand())
		}
	}
	in.openClawGateway(w, doc, cfg)
}

// listsPath reports whether list (plugins.load.paths) names dir.
func (in *Installer) listsPath(list any, dir string) bool {
	items, _ := list.([]any)
	want := samePaths(dir)
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			continue
		}
		for _, p := range samePaths(filepath.Clean(in.expandHome(s))) {
			for _, d := range want {
				if p == d {
					return true
				}
			}
		}
	}
	return false
}

func hasString(list any, s string) bool {
	items, _ := list.([]any)
	for _, it := range items {
		if it == s {
			return true
		}
	}
	return false
}

// OpenClawGateway is what a running Gateway's lock file says about it.
type OpenClawGateway struct {
	PID        int       `json:"pid"`
	CreatedAt  string    `json:"createdAt"`
	ConfigPath string    `json:"configPath"`
	Role       string    `json:"role"` // absent for the Gateway itself
	StartTime  *int64    `json:"startTime"`
	Started    time.Time `json:"-"` // CreatedAt, parsed
}

// RunningOpenClawGateway finds the Gateway running on stateDir from its
// lock file: nil when there is none (no lock, a lock of another role, or
// a lock whose process is gone).
func RunningOpenClawGateway(stateDir string) (*OpenClawGateway, error) {
	sub := "openclaw"
	if uid := os.Getuid(); uid >= 0 {
		sub = "openclaw-" + strconv.Itoa(uid)
	}
	data, err := os.ReadFile(filepath.Join(stateDir, "tmp", sub, "gateway.state.lock"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var g OpenClawGateway
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, nil // being written, or not a lock of the Gateway's
	}
	if g.Role != "" && g.Role != "gateway" {
		return nil, nil
	}
	if g.Started, err = time.Parse(time.RFC3339Nano, g.CreatedAt); err != nil {
		return nil, nil
	}
	if !processAlive(g.PID, g.StartTime) {
		return nil, nil
	}
	return &g, nil
}

// processAlive reports whether pid runs and, where /proc tells, is the
// process that started at startTime (clock ticks after boot, as OpenClaw
// records it), not a later one given the same pid.
func processAlive(pid int, startTime *int64) bool {
	if pid <= 0 {
		return false
	}
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 19 && startTime != nil {
			if st, err := strconv.ParseInt(fields[19], 10, 64); err == nil && st != *startTime {
				return false
			}
		}
		return len(fields) == 0 || fields[0] != "Z"
	} else if runtime.GOOS == "linux" {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// openClawGateway adds to w a running Gateway that runs an older copy of
// memvault's plugin than the one on disk, or reads another config.
func (in *Installer) openClawGateway(w *Wiring, doc map[string]any, cfg string) {
	g, err := RunningOpenClawGateway(in.openClawStateDir())
	if err != nil || g == nil {
		return
	}
	running := fmt.Sprintf("the running OpenClaw Gateway (pid %d, started %s)", g.PID, g.Started.Local().Format("2006-01-02 15:04:05"))
	if g.ConfigPath != "" && !sameOrEqual(g.ConfigPath, cfg) {
		w.warn(running+" reads "+g.ConfigPath+", not "+cfg+" where memvault's plugin is registered",
			"run "+in.installCommand()+" with OPENCLAW_CONFIG_PATH="+g.ConfigPath+", or restart the Gateway on "+cfg)
		return
	}
	var changed time.Time
	for _, f := range []string{"index.js", "package.json", "openclaw.plugin.json"} {
		if st, err := os.Stat(filepath.Join(w.Config, f)); err == nil && st.ModTime().After(changed) {
			changed = st.ModTime()
		}
	}
	gw, _ := doc["gateway"].(map[string]any)
	reload, _ := gw["reload"].(map[string]any)
	mode, _ := reload["mode"].(string)
	loaded := g.Started
	if st, err := os.Stat(cfg); err == nil && mode != "off" && st.ModTime().After(loaded) {
		loaded = st.ModTime() // a change of the config reloads the plugins
	}
	if !changed.After(loaded) {
		return
	}
	when := changed.Local().Format("2006-01-02 15:04:05")
	if mode == "off" {
		w.fail(running+" has not loaded memvault's plugin as written at "+when+" (gateway.reload.mode is off)", "openclaw gateway restart")
		return
	}
	w.fail(running+" loaded memvault's plugin before its files changed at "+when+", and runs the old one until it reloads it",
		"openclaw plugins reload memvault (or openclaw gateway restart)")
}

func sameOrEqual(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	return sameFile(a, b)
}
