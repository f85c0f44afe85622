package hooks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// openClawRig is memvault's OpenClaw plugin installed at project scope,
// with OpenClaw's config and state folder in a temporary home.
type openClawRig struct {
	in          *Installer
	config      string
	state       string
	plugin      string
	openClawEnv map[string]string
}

func newOpenClawRig(t *testing.T, config string) *openClawRig {
	t.Helper()
	dir := t.TempDir()
	r := &openClawRig{config: filepath.Join(dir, "openclaw.json"), state: filepath.Join(dir, "state")}
	r.openClawEnv = map[string]string{"OPENCLAW_CONFIG_PATH": r.config, "OPENCLAW_STATE_DIR": r.state}
	bin := filepath.Join(dir, "memvault")
	// project-scope hooks run memvault from PATH: this one
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	proj := filepath.Join(dir, "proj")
	os.MkdirAll(proj, 0o755)
	r.in = &Installer{Harness: "openclaw", Scope: ScopeProject, Project: proj, Home: filepath.Join(dir, "home"), Bin: bin,
		Env: func(k string) string { return r.openClawEnv[k] }}
	r.plugin = r.in.configPath()
	if config != "" {
		if err := os.WriteFile(r.config, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := r.in.Plan(false)
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(cs); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *openClawRig) problems(t *testing.T) []string {
	t.Helper()
	w := r.in.Doctor()
	if !w.Installed() {
		t.Fatalf("doctor does not see the plugin: %+v", w)
	}
	var out []string
	for _, p := range w.Problems {
		out = append(out, p.Severity+": "+p.Problem+" => "+p.Fix)
	}
	return out
}

// edit changes OpenClaw's config as a person would.
func (r *openClawRig) edit(t *testing.T, change func(pl map[string]any)) {
	t.Helper()
	data, _ := os.ReadFile(r.config)
	doc := map[string]any{}
	json.Unmarshal(data, &doc)
	pl, _ := doc["plugins"].(map[string]any)
	change(pl)
	data, _ = json.Marshal(doc)
	if err := os.WriteFile(r.config, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorOpenClawRegistration: each way OpenClaw's config keeps it from
// loading memvault's plugin is one problem with its fix, and a config
// install wrote has none.
func TestDoctorOpenClawRegistration(t *testing.T) {
	r := newOpenClawRig(t, `{"plugins": {"allow": ["other"], "entries": {"other": {"enabled": true}}}}`)
	wantProblems(t, r.problems(t)) // install joined the allowlist

	r.edit(t, func(pl map[string]any) { pl["allow"] = []any{"other"} })
	wantProblems(t, r.problems(t), `error: plugins.allow in `+r.config+` does not name memvault, and OpenClaw loads only the plugins an allowlist names => add "memvault" to plugins.allow`)

	r.edit(t, func(pl map[string]any) {
		pl["allow"] = []any{"other", "memvault"}
		pl["deny"] = []any{"memvault"}
		pl["enabled"] = false
		pl["load"] = map[string]any{"paths": []any{"/somewhere/else"}}
		pl["entries"].(map[string]any)["memvault"].(map[string]any)["hooks"] = map[string]any{}
	})
	wantProblems(t, r.problems(t),
		"OpenClaw's plugins are switched off",
		"plugins.load.paths in "+r.config+" does not hold memvault's plugin folder "+r.plugin,
		"plugins.deny in "+r.config+" names memvault",
		"allowConversationAccess is not true")

	r.edit(t, func(pl map[string]any) {
		delete(pl, "deny")
		delete(pl, "enabled")
		pl["load"] = map[string]any{"paths": []any{r.plugin + "/"}}
		pl["entries"].(map[string]any)["memvault"] = map[string]any{"enabled": false}
	})
	wantProblems(t, r.problems(t), "memvault's plugin is switched off (plugins.entries.memvault.enabled is false")

	r.edit(t, func(pl map[string]any) { delete(pl["entries"].(map[string]any), "memvault") })
	wantProblems(t, r.problems(t), "plugins.entries.memvault is missing")

	os.WriteFile(r.config, []byte("// JSON5\n{plugins: {allow: ['memvault',],}}\n"), 0o644)
	wantProblems(t, r.problems(t), "plugins.load.paths in "+r.config+" does not hold", "plugins.entries.memvault is missing in "+r.config)
	os.WriteFile(r.config, []byte("// JSON5\n{plugins: {\n"), 0o644)
	wantProblems(t, r.problems(t), "error: cannot read OpenClaw's config "+r.config+": not JSON5")

	os.Remove(r.config)
	wantProblems(t, r.problems(t), "OpenClaw's config "+r.config+" does not exist")
}

// lockGateway writes the lock a running Gateway keeps, for a process
// (pid) that started at start, with its /proc start time when known.
func (r *openClawRig) lockGateway(t *testing.T, pid int, started time.Time, extra map[string]any) {
	t.Helper()
	dir := filepath.Join(r.state, "tmp", "openclaw-"+strconv.Itoa(os.Getuid()))
	os.MkdirAll(dir, 0o755)
	lock := map[string]any{"pid": pid, "createdAt": started.UTC().Format("2006-01-02T15:04:05.000Z"), "configPath": r.config,
		"stateDir": r.state, "port": 18789}
	if st := procStart(pid); st >= 0 {
		lock["startTime"] = st
	}
	for k, v := range extra {
		lock[k] = v
	}
	data, _ := json.MarshalIndent(lock, "", "  ")
	// OpenClaw pads the file with blanks after the JSON
	data = append(data, []byte("\n\t \t  \n")...)
	if err := os.WriteFile(filepath.Join(dir, "gateway.state.lock"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func procStart(pid int) int64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	n, _ := strconv.ParseInt(f[19], 10, 64)
	return n
}

func setTimes(t *testing.T, at time.Time, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDoctorOpenClawGateway: a running Gateway (this test's own process
// stands in for it) that started before the plugin's files changed runs
// the old plugin; a change of the config after them reloaded it, unless
// the reload mode is off; a Gateway on another config is named; a lock
// left by a dead process, by a pid reused for a later process, or by an
// embedded agent run is no Gateway.
func TestDoctorOpenClawGateway(t *testing.T) {
	r := newOpenClawRig(t, `{"gateway": {"mode": "local"}}`)
	files := []string{filepath.Join(r.plugin, "index.js"), filepath.Join(r.plugin, "package.json"), filepath.Join(r.plugin, "openclaw.plugin.json")}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	wantProblems(t, r.problems(t)) // no Gateway

	// started before the install; install wrote the plugin, then the
	// config, which hot-reloaded the plugins
	r.lockGateway(t, os.Getpid(), t0, nil)
	setTimes(t, t0.Add(time.Minute), files...)
	setTimes(t, t0.Add(2*time.Minute), r.config)
	wantProblems(t, r.problems(t))

	// a reinstall rewrote only the plugin
	setTimes(t, t0.Add(3*time.Minute), files[0])
	wantProblems(t, r.problems(t), "error: the running OpenClaw Gateway (pid "+strconv.Itoa(os.Getpid())+", started ") // and its fix
	if got := r.problems(t)[0]; !strings.Contains(got, "=> openclaw plugins reload memvault (or openclaw gateway restart)") {
		t.Errorf("fix: %s", got)
	}
	// started after the plugin was written: it loaded this one
	r.lockGateway(t, os.Getpid(), t0.Add(4*time.Minute), nil)
	wantProblems(t, r.problems(t))

	// reload mode off: the config change did not reload the plugins
	r.lockGateway(t, os.Getpid(), t0, nil)
	os.WriteFile(r.config, []byte(`{"gateway": {"mode": "local", "reload": {"mode": "off"}}, "plugins": {"load": {"paths": [`+strconv.Quote(r.plugin)+
		`]}, "entries": {"memvault": {"enabled": true, "hooks": {"allowConversationAccess": true}}}}}`), 0o644)
	setTimes(t, t0.Add(time.Minute), files...)
	setTimes(t, t0.Add(2*time.Minute), r.config)
	wantProblems(t, r.problems(t), "has not loaded memvault's plugin as written at")
	if got := r.problems(t)[0]; !strings.HasSuffix(got, "=> openclaw gateway restart") {
		t.Errorf("fix: %s", got)
	}

	// a Gateway on another config
	r.lockGateway(t, os.Getpid(), t0, map[string]any{"configPath": "/elsewhere/openclaw.json"})
	wantProblems(t, r.problems(t), "warning: the running OpenClaw Gateway (pid")

	// no Gateway: a dead pid, a reused pid, an embedded agent's lock
	r.lockGateway(t, 1<<22+12345, t0, nil)
	wantProblems(t, r.problems(t))
	if procStart(os.Getpid()) >= 0 {
		r.lockGateway(t, os.Getpid(), t0, map[string]any{"startTime": procStart(os.Getpid()) + 1})
		wantProblems(t, r.problems(t))
	}
	r.lockGateway(t, os.Getpid(), t0, map[string]any{"role": "agent-embedded"})
	wantProblems(t, r.problems(t))
}

// TestDoctorOpenClawPluginOutOfDate: doctor compares the installed
// plugin's files, byte for byte, with what this memvault installs. A
// plugin an older memvault wrote (a handler missing), a hand edit, a
// `const BIN` line that smuggles code after the string, and a file
// deleted are each reported with the install that rewrites it; the
// install does, and doctor is quiet again. A plugin that differs only in
// the binary it runs is not out of date (the binary check reports that).
func TestDoctorOpenClawPluginOutOfDate(t *testing.T) {
	r := newOpenClawRig(t, "")
	wantProblems(t, r.problems(t))
	index := filepath.Join(r.plugin, "index.js")
	cur, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	const outOfDate = "warning: memvault's OpenClaw plugin in "
	for _, c := range []struct{ name, data string }{
		{"an older memvault's", strings.Replace(string(cur), "session_start", "session_begin", 1)},
		{"edited", string(cur) + "\n// a person's note\n"},
		{"code after the binary", strings.Replace(string(cur), `const BIN = "memvault"`, `const BIN = "memvault"; require("child_process").exec("x")`, 1)},
	} {
		if c.data == string(cur) {
			t.Fatalf("%s: the plugin holds no line to change", c.name)
		}
		if err := os.WriteFile(index, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		wantProblems(t, r.problems(t), outOfDate+r.plugin+" is not the one this memvault installs (index.js differ")
		if got := r.problems(t)[0]; !strings.Contains(got, "=> memvault install openclaw rewrites it; then `openclaw plugins reload memvault`") {
			t.Errorf("%s: the fix: %s", c.name, got)
		}
	}
	os.Remove(filepath.Join(r.plugin, "openclaw.plugin.json"))
	wantProblems(t, r.problems(t),
		"error: memvault's OpenClaw plugin in "+r.plugin+" lacks openclaw.plugin.json, so OpenClaw cannot load it as installed => memvault install openclaw",
		outOfDate)
	cs, err := r.in.Plan(false)
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(cs); err != nil {
		t.Fatal(err)
	}
	wantProblems(t, r.problems(t))

	// installed by another memvault binary of this version: only the binary differs
	other := filepath.Join(t.TempDir(), "memvault")
	os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(index, []byte(strings.Replace(string(cur), `const BIN = "memvault"`, "const BIN = "+strconv.Quote(other), 1)), 0o644)
	wantProblems(t, r.problems(t), "warning: the hooks run "+other+", not this memvault")
}
