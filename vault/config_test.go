package vault

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A transaction that writes memvault.toml changes the configuration the
// vault runs on once its commit lands, every section at once (the
// engine's, and those its features read), the same as opening the vault
// again would give; a transaction that fails leaves it as it was; and a
// text that memvault could not run on is refused before anything is
// written.
func TestConfigFollowsItsTransactions(t *testing.T) {
	v := newVault(t)
	path := filepath.Join(v.Root, ConfigFile)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	write := func(text string, fail error) error {
		_, err := v.Update(TxOptions{}, func(tx *Tx) error {
			tx.WriteFile(MustRel(ConfigFile), []byte(text))
			return fail
		})
		return err
	}

	edited := strings.Replace(string(orig), `agent = "default"`, `agent = "bot"`, 1) +
		"\n[executors.x]\ncommand = \"c\"\nweight = 2\n\n[summarise]\nexecutor = \"x\"\n"
	if err := write(edited, errors.New("stop")); err == nil {
		t.Fatal("a failing function committed")
	}
	if v.Config.Agent != "default" || v.Config.Executors != nil {
		t.Fatalf("a failed transaction changed the configuration: %+v", v.Config)
	}
	if err := write(edited, nil); err != nil {
		t.Fatal(err)
	}
	if v.Config.Agent != "bot" || v.Config.Executors["x"].Weight != 2 || v.Config.Summarise.Executor != "x" {
		t.Fatalf("after the write: agent %q, executors %+v, summarise %+v", v.Config.Agent, v.Config.Executors, v.Config.Summarise)
	}
	fresh, err := Open(v.Root)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fresh.Config, v.Config) {
		t.Fatalf("the vault runs on\n%+v\nopened again it reads\n%+v", v.Config, fresh.Config)
	}
	if v.Rules == nil {
		t.Fatal("redaction is on by default")
	}
	if err := write(strings.Replace(edited, "enabled = true", "enabled = false", 1), nil); err != nil || v.Rules != nil {
		t.Fatalf("redaction turned off: rules %v, %v", v.Rules, err)
	}

	before, _ := os.ReadFile(path)
	for _, bad := range []string{"agent = \n", "[executors.y]\ncommand = \"c\"\nweight = \"two\"\n", "agent = \"../x\"\n", "[lock]\ntimeout = \"soon\"\n"} {
		err := write(bad, nil)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%q written: %v", bad, err)
		}
		if now, _ := os.ReadFile(path); string(now) != string(before) {
			t.Errorf("%q: the refused file was written", bad)
		}
		if v.Config.Agent != "bot" {
			t.Errorf("%q: the refused file changed the configuration", bad)
		}
	}
}

// A memvault.toml that does not decode is one error, naming the line with
// the hint, whether its syntax is wrong or a value has the wrong type in
// a section a feature reads; Open refuses it, and a vault opened for
// capture falls back on the committed file.
func TestConfigThatDoesNotDecode(t *testing.T) {
	v := newVault(t)
	path := filepath.Join(v.Root, ConfigFile)
	for text, want := range map[string]string{
		"agent = \n": "memvault.toml: toml: line 1 (last key \"agent\"): expected value but found '\\n' instead",
		"[executors.x]\ncommand = \"c\"\nweight = \"two\"\n": "memvault.toml: toml: line 3 (last key \"executors.x.weight\"): incompatible types: TOML value has type string; destination has type integer",
		"[heads]\nlease = 2\n":                               "memvault.toml: toml: line 2 (last key \"heads.lease\"): incompatible types: TOML value has type int64; destination has type string",
	} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(v.Root)
		var e *Error
		if !errors.As(err, &e) || e.Class != ErrInvalid || e.Msg != want || !strings.HasPrefix(e.Hint, "fix the file by hand") {
			t.Errorf("%q: %#v", text, err)
		}
		cv, err := OpenForCapture(v.Root)
		if err != nil || cv.configErr == nil || cv.Config.Agent != "default" {
			t.Errorf("%q: opened for capture: %v", text, err)
		}
	}
}
