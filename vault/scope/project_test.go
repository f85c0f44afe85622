package scope

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/memory"
	"github.com/memvault/memvault/vault/vaulttest"
)

// slugify was a regular expression compiled when the package loaded; it is
// plain string code now. The table pins what the expression did, and each
// case, and every short mix of the tricky pieces, is also checked against
// the old expression itself.

// oldSlugify is slugify as it was, with `[^a-z0-9._-]+`.
var oldSlugRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9._-]+`) })

func oldSlugify(s string) string {
	s = oldSlugRE().ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "-._")
	if len(s) > 64 {
		s = strings.Trim(s[:64], "-._")
	}
	return s
}

func TestSlugify(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"shop", "shop"},
		{"My Shop", "my-shop"},
		{"my  shop!!", "my-shop"},
		{"a-€b", "a--b"},
		{"Café Über", "caf-ber"},
		{"v1.2_beta", "v1.2_beta"},
		{"--.x._--", "x"},
		{"\xffab\xfe", "ab"},
		{"日本", ""},
		{strings.Repeat("ab", 40), strings.Repeat("ab", 32)},
		{strings.Repeat("a", 63) + " x", strings.Repeat("a", 63)},
	}
	for _, c := range cases {
		if got := slugify(c.in); got != c.want {
			t.Errorf("slugify(%q) = %q, want %q", c.in, got, c.want)
		}
		if old := oldSlugify(c.in); old != c.want {
			t.Errorf("table disagrees with the old expression on %q: %q", c.in, old)
		}
	}
	vaulttest.Mixes(t, []string{"a", "Z", "-", ".", " ", "é", "\xff", "İ"}, 5, func(s string) {
		if got, old := slugify(s), oldSlugify(s); got != old {
			t.Errorf("slugify(%q) = %q, the expression gave %q", s, got, old)
		}
	})
}

func TestProjectThread(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "Some Repo")
	run := func(args ...string) {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", repo)
	if got := ProjectThread(filepath.Join(repo)); got != "project:some-repo" {
		t.Fatalf("no remote: %q", got)
	}
	run("-C", repo, "remote", "add", "origin", "git@example.com:acme/Shop.Front.git")
	os.MkdirAll(filepath.Join(repo, "sub", "dir"), 0o755)
	if got := ProjectThread(filepath.Join(repo, "sub", "dir")); got != "project:shop.front" {
		t.Fatalf("remote: %q", got)
	}
	run("-C", repo, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "x")
	run("-C", repo, "worktree", "add", "-q", filepath.Join(dir, "wt2"))
	if got := ProjectThread(filepath.Join(dir, "wt2")); got != "project:shop.front-wt2" {
		t.Fatalf("worktree: %q", got)
	}
	if got := ProjectThread(filepath.Join(dir, "plain folder")); got != "project:plain-folder" {
		t.Fatalf("folder: %q", got)
	}
}

// WorkThread gives the working directory's thread inside the project that
// holds the vault, and elsewhere only a thread the vault knows.
func TestWorkThread(t *testing.T) {
	base := t.TempDir()
	proj := filepath.Join(base, "Shop")
	v, _, err := vault.Init(filepath.Join(proj, vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"api/v2", "../elsewhere/tools", "../known"} {
		if err := os.MkdirAll(filepath.Join(proj, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	check := func(dir, want string, wantKnown bool) {
		t.Helper()
		got, known, err := WorkThread(v, dir)
		if err != nil || got != want || known != wantKnown {
			t.Errorf("WorkThread(%s) = %q, %v, %v; want %q, %v", dir, got, known, err, want, wantKnown)
		}
	}
	check(proj, "project:shop", false)
	check(filepath.Join(proj, "api", "v2"), "project:shop", false) // no git: the project folder
	check(v.Root, "project:shop", false)                           // inside the vault
	check(filepath.Join(v.Root, "ledger"), "project:shop", false)
	check(filepath.Join(base, "elsewhere", "tools"), "", false) // unrelated and unknown
	check("", "", false)

	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := memory.Remember(tx, memory.Input{Text: "a row", Thread: "project:known"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	check(filepath.Join(base, "known"), "project:known", true) // outside, but known
	v.Config.Threads = map[string]struct {
		Aliases []string `toml:"aliases"`
	}{"project:tools": {Aliases: []string{"tooling"}}}
	check(filepath.Join(base, "elsewhere", "tools"), "project:tools", true) // declared in memvault.toml

	// A subfolder whose own thread the vault knows keeps it.
	if _, err := v.Update(vault.TxOptions{}, func(tx *vault.Tx) error {
		_, err := memory.Remember(tx, memory.Input{Text: "a row", Thread: "project:api"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	check(filepath.Join(proj, "api"), "project:api", true)
	check(filepath.Join(proj, "api", "v2"), "project:shop", false)

	// A vault not named .memory holds no project: only known threads.
	other, _, err := vault.Init(filepath.Join(base, "notes"))
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := WorkThread(other, filepath.Join(base, "notes"))
	if err != nil || got != "" {
		t.Errorf("vault not named %s: %q, %v", vault.DirName, got, err)
	}
}

// In a git work tree, every folder of it is the project's, by its origin.
func TestWorkThreadGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	proj := filepath.Join(t.TempDir(), "checkout")
	if out, err := exec.Command("git", "init", "-q", proj).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if out, err := exec.Command("git", "-C", proj, "remote", "add", "origin", "https://example.com/acme/shop.git").CombinedOutput(); err != nil {
		t.Fatalf("git remote: %v\n%s", err, out)
	}
	v, _, err := vault.Init(filepath.Join(proj, vault.DirName))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(proj, "src", "api"), 0o755)
	for _, dir := range []string{proj, filepath.Join(proj, "src", "api"), v.Root} {
		if got, _, err := WorkThread(v, dir); err != nil || got != "project:shop" {
			t.Errorf("WorkThread(%s) = %q, %v; want project:shop", dir, got, err)
		}
	}
}
