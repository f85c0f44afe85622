package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memvault/memvault/vault/vaulttest"
)

// TestIgnoredByPatternsMatchesGit holds init's check without git to git's
// own answer: for each layout of ignore files, whether the vault's folder
// is ignored already must be what `git check-ignore` says, or init would
// add a line git does not need or skip one it does.
func TestIgnoredByPatternsMatchesGit(t *testing.T) {
	if !vaulttest.HasGit() {
		t.Skip("git not installed")
	}
	cases := []struct {
		name  string
		rel   string
		files map[string]string // path in the work tree → content
	}{
		{"nothing", ".memory", nil},
		{"folder pattern", ".memory", map[string]string{".gitignore": ".memory/\n"}},
		{"anchored", ".memory", map[string]string{".gitignore": "/.memory/\n"}},
		{"other anchored", "sub/.memory", map[string]string{".gitignore": "/.memory/\n"}},
		{"anywhere", "sub/.memory", map[string]string{".gitignore": ".memory\n"}},
		{"glob", "sub/.memory", map[string]string{".gitignore": ".mem*\n"}},
		{"parent ignored", "sub/.memory", map[string]string{".gitignore": "sub/\n"}},
		{"negated", ".memory", map[string]string{".gitignore": ".memory/\n!.memory/\n"}},
		{"nested gitignore", "sub/.memory", map[string]string{"sub/.gitignore": ".memory/\n"}},
		{"nested elsewhere", "sub/.memory", map[string]string{"other/.gitignore": ".memory/\n"}},
		{"comment", ".memory", map[string]string{".gitignore": "# .memory/\n"}},
		{"crlf", ".memory", map[string]string{".gitignore": "x\r\n.memory/\r\n"}},
		{"info exclude", ".memory", map[string]string{".git/info/exclude": ".memory/\n"}},
		{"a file pattern", ".memory", map[string]string{".gitignore": ".memory/ledger\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			top := t.TempDir()
			git := vaulttest.Git{Dir: top, Env: vaulttest.Sandbox(t.TempDir())}
			git.Run(t, "init", "-q")
			for p, content := range tc.files {
				full := filepath.Join(top, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := git.Try("check-ignore", "-q", "--", tc.rel+"/")
			want := err == nil
			if got := ignoredByPatterns(top, tc.rel); got != want {
				t.Errorf("ignoredByPatterns(%q) = %v, git check-ignore says %v", tc.rel, got, want)
			}
		})
	}
}

// TestIgnoreLine escapes what a pattern gives meaning to, so the line
// names exactly the vault's folder.
func TestIgnoreLine(t *testing.T) {
	for rel, want := range map[string]string{
		".memory":     "/.memory/",
		"sub/.memory": "/sub/.memory/",
		"a*b?[c]":     `/a\*b\?\[c\]/`,
		`back\slash`:  `/back\\slash/`,
		"trailing ":   `/trailing\ /`,
		"#hash":       "/#hash/",
		"!bang":       "/!bang/",
	} {
		if got := ignoreLine(rel); got != want {
			t.Errorf("ignoreLine(%q) = %q, want %q", rel, got, want)
		}
	}
}
