package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorJSONParses: `memvault doctor --json` is one JSON document
// whose problems each name where they were found, what is wrong and the
// fix, whatever the exit code (0, 3 with hooks and no vault, 9 with an
// untrusted Codex project), and its ok matches the exit code.
func TestDoctorJSONParses(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	if err := os.MkdirAll(filepath.Join(proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", filepath.Join(dir, "home"))
	t.Setenv("CODEX_HOME", filepath.Join(dir, "codex"))
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Chdir(proj)

	doctor := func(want int) doctorReport {
		t.Helper()
		var out, errb bytes.Buffer
		code := Run([]string{"doctor", "--json"}, strings.NewReader(""), &out, &errb)
		if code != want {
			t.Fatalf("doctor --json exited %d, want %d\n%s%s", code, want, out.String(), errb.String())
		}
		var rep doctorReport
		dec := json.NewDecoder(&out)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rep); err != nil {
			t.Fatalf("doctor --json does not parse: %v\n%s", err, out.String())
		}
		if rep.OK != (want == 0) {
			t.Errorf("ok is %v with exit %d", rep.OK, want)
		}
		for _, p := range rep.Problems {
			if p.Harness == "" || p.Problem.Problem == "" || p.Fix == "" || (p.Severity != "error" && p.Severity != "warning") {
				t.Errorf("an incomplete problem: %+v", p)
			}
		}
		return rep
	}
	rep := doctor(0)
	if rep.Vault != nil || len(rep.Problems) != 0 || len(rep.Harnesses) != 5 {
		t.Fatalf("nothing here: %+v", rep)
	}

	// Codex's hooks wired by hand, no vault
	os.MkdirAll(filepath.Join(proj, ".codex"), 0o755)
	os.WriteFile(filepath.Join(proj, ".codex", "hooks.json"),
		[]byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/bin/true hook codex stop"}]}]}}`), 0o644)
	rep = doctor(ExitNotFound)
	if rep.Problems[0].Harness != "vault" || !strings.Contains(rep.Problems[0].Fix, "memvault init") {
		t.Errorf("first problem: %+v", rep.Problems[0])
	}

	if code := Run([]string{"init"}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("init: %d", code)
	}
	rep = doctor(exitSetup)
	var codex []string
	for _, p := range rep.Problems {
		if p.Harness == "codex" && p.Severity == "error" {
			codex = append(codex, p.Problem.Problem)
		}
	}
	if len(codex) != 3 || !strings.Contains(codex[2], "not trusted in Codex") {
		t.Errorf("codex problems: %q", codex)
	}
}
