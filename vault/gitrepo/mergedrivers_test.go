package gitrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memvault/memvault/vault/vaulttest"
)

const someConfig = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = ../o\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"

func TestWithDriver(t *testing.T) {
	bin := "/opt/memvault/bin/memvault"
	added := string(withDriver([]byte(someConfig), bin))
	if !strings.HasPrefix(added, someConfig) {
		t.Fatalf("the rest of the config changed:\n%s", added)
	}
	if withDriver([]byte(added), bin) != nil {
		t.Error("registering twice changed the file")
	}
	// The binary moved: only the driver line changes.
	moved := string(withDriver([]byte(added), "/usr/bin/memvault"))
	if strings.Count(moved, "\n") != strings.Count(added, "\n") || !strings.Contains(moved, "'/usr/bin/memvault' merge-driver") {
		t.Errorf("moved binary:\n%s", moved)
	}
	if strings.Replace(moved, "/usr/bin/memvault", bin, 2) != added {
		t.Errorf("more than the driver line changed:\n%s", moved)
	}
	// A section a person wrote, between others, without a name, in their
	// own layout: the driver line is replaced, the name added inside it.
	mine := "[merge \"memvault\"]\n  driver = true\n\n[user]\n\tname = Me\n"
	got := string(withDriver([]byte(mine), bin))
	want := "[merge \"memvault\"]\n\tdriver = " + configQuote(driverCommand(bin)) + "\n\tname = memvault: the vault's files merged by kind\n\n[user]\n\tname = Me\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// No final newline, no file at all.
	if got := string(withDriver([]byte("[core]\n\tbare = false"), bin)); !strings.HasPrefix(got, "[core]\n\tbare = false\n[merge") {
		t.Errorf("no final newline:\n%s", got)
	}
	if got := string(withDriver(nil, bin)); !strings.HasPrefix(got, "[merge \"memvault\"]\n") {
		t.Errorf("empty config:\n%s", got)
	}
	if back := withoutDriver([]byte(added)); string(back) != someConfig {
		t.Errorf("unregister:\n%s", back)
	}
	if withoutDriver([]byte(someConfig)) != nil {
		t.Error("unregister changed a config without the driver")
	}
}

func TestDriverBinRoundTrip(t *testing.T) {
	for _, bin := range []string{"/usr/bin/memvault", "/home/o'neil/my tools/memvault", `/a\b"c;d#e`} {
		cmd := driverCommand(bin)
		if got := configUnquote(configQuote(cmd)); got != cmd {
			t.Errorf("config quoting of %q: %q", cmd, got)
		}
		if got, ok := driverBin(cmd); !ok || got != bin {
			t.Errorf("driverBin(%q) = %q, %v", cmd, got, ok)
		}
	}
}

// TestRegisteredDriverReadsBackWithGit checks the quoting against git's own
// config parser, with a binary path that needs it.
func TestRegisteredDriverReadsBackWithGit(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("needs the git binary")
	}
	root := filepath.Join(t.TempDir(), ".memory")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	vaulttest.Git{Dir: root}.Run(t, "init", "-q")
	if err := os.WriteFile(filepath.Join(root, GitattributesFile), []byte(GitattributesText()), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "o'neil tools", "memvault")
	if changed, err := RegisterMergeDrivers(root, bin); err != nil || !changed {
		t.Fatalf("register: %v %v", changed, err)
	}
	got := vaulttest.Git{Dir: root}.Run(t, "config", "merge.memvault.driver")
	if strings.TrimSuffix(got, "\n") != driverCommand(bin) {
		t.Errorf("git reads the driver as %q, want %q", got, driverCommand(bin))
	}
	// The binary is not there: status says so.
	if ok, detail := MergeDriversStatus(root); ok || !strings.Contains(detail, "missing") {
		t.Errorf("status with a missing binary: %v %q", ok, detail)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if ok, detail := MergeDriversStatus(root); !ok || !strings.Contains(detail, bin) {
		t.Errorf("status: %v %q", ok, detail)
	}
	// git still reads the whole config after the edit.
	vaulttest.Git{Dir: root}.Run(t, "config", "--list")
}
