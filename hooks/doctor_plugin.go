package hooks

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A plugin harness (OpenClaw, OpenCode) runs the JavaScript memvault
// installed, whatever memvault runs its hooks: a plugin an older memvault
// installed (or a person edited) keeps its old behaviour after memvault is
// upgraded. doctor compares each installed plugin file, byte for byte,
// with the one this binary would install (docs/HARNESSES.md, "What doctor
// checks"), with the binary the installed plugin runs kept as it is
// written there: a plugin that differs only in the binary it runs is the
// binary check's to report ("the hooks run …, not this memvault").

// pluginFiles lists the harness's plugin files: the source in the binary
// and where it is installed, the one holding the binary first.
func (in *Installer) pluginFiles(w *Wiring) [][2]string {
	switch in.Harness {
	case "openclaw":
		var out [][2]string
		for _, f := range []string{"index.js", "package.json", "openclaw.plugin.json"} {
			out = append(out, [2]string{"plugins/openclaw/" + f, filepath.Join(w.Config, f)})
		}
		return out
	case "opencode":
		return [][2]string{{"plugins/opencode/memvault.js", w.Config}}
	}
	return nil
}

// pluginCurrent adds to w the installed plugin files that are missing, or
// are not what this memvault installs.
func (in *Installer) pluginCurrent(w *Wiring) {
	files := in.pluginFiles(w)
	if len(files) == 0 {
		return
	}
	var missing, differ []string
	binLiteral := ""
	for i, f := range files {
		have, err := os.ReadFile(f[1])
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, filepath.Base(f[1]))
			continue
		}
		if err != nil {
			w.fail("cannot read memvault's plugin file "+f[1]+": "+oneLine(err.Error()), "check its permissions, or "+in.installCommand())
			return
		}
		if i == 0 {
			binLiteral = pluginBinLiteral(have)
		}
		want, err := in.renderPlugin(f[0], binLiteral)
		if err != nil {
			return
		}
		if !bytes.Equal(have, want) {
			differ = append(differ, filepath.Base(f[1]))
		}
	}
	name := map[string]string{"openclaw": "OpenClaw", "opencode": "OpenCode"}[in.Harness]
	where := filepath.Dir(files[0][1])
	if len(missing) > 0 {
		w.fail("memvault's "+name+" plugin in "+where+" lacks "+strings.Join(missing, ", ")+", so "+name+" cannot load it as installed",
			in.installCommand()+reloadHint(in.Harness))
	}
	if len(differ) > 0 {
		w.warn("memvault's "+name+" plugin in "+where+" is not the one this memvault installs ("+strings.Join(differ, ", ")+
			" differ: installed by another version of memvault, or edited), so "+name+" runs other code than this memvault's",
			in.installCommand()+" rewrites it"+reloadHint(in.Harness))
	}
}

// reloadHint is what a harness needs after its plugin was rewritten.
func reloadHint(harness string) string {
	switch harness {
	case "openclaw":
		return "; then `openclaw plugins reload memvault` if a Gateway runs (or restart it)"
	case "opencode":
		return "; then restart OpenCode"
	}
	return ""
}

// pluginBinLiteral is the string literal an installed plugin's
// `const BIN = ` line holds, as written; "" when there is none.
func pluginBinLiteral(data []byte) string {
	const prefix = "const BIN = "
	i := bytes.Index(data, []byte(prefix))
	if i < 0 {
		return ""
	}
	line := data[i+len(prefix):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	lit := string(bytes.TrimSpace(line))
	if _, err := strconv.Unquote(lit); err != nil {
		return ""
	}
	return lit
}
