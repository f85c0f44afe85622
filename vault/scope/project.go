package scope

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"

	"github.com/memvault/memvault/vault"
)

// ProjectThread derives the thread of a session from where the harness
// runs: the repository's origin remote name (plus the worktree's folder for
// a linked worktree), else the folder name, as project:<slug>. Two clones
// of one project share a thread; two worktrees of it do not.
func ProjectThread(cwd string) string {
	if cwd == "" {
		return ""
	}
	name := filepath.Base(cwd)
	if root, gitDir, common, ok := findGit(cwd); ok {
		name = filepath.Base(root)
		if remote := originName(filepath.Join(common, "config")); remote != "" {
			name = remote
		}
		if gitDir != common { // a linked worktree
			name += "-" + filepath.Base(root)
		}
	}
	slug := slugify(name)
	if slug == "" {
		return ""
	}
	return "project:" + slug
}

// findGit walks up from dir to the work tree root and returns it, its git
// directory, and the common git directory (they differ in a linked
// worktree, whose .git is a file pointing into the main repository).
func findGit(dir string) (root, gitDir, common string, ok bool) {
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".git")
		if info, err := os.Stat(p); err == nil {
			if info.IsDir() {
				return d, p, p, true
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return "", "", "", false
			}
			gd := strings.TrimSpace(strings.TrimPrefix(string(data), "gitdir:"))
			if !filepath.IsAbs(gd) {
				gd = filepath.Join(d, gd)
			}
			common = gd
			if c, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
				cd := strings.TrimSpace(string(c))
				if !filepath.IsAbs(cd) {
					cd = filepath.Join(gd, cd)
				}
				common = filepath.Clean(cd)
			}
			return d, gd, common, true
		}
		if filepath.Dir(d) == d {
			return "", "", "", false
		}
	}
}

// originName reads the repository name from remote "origin" in a git
// config file: the last path element of its url, without ".git".
func originName(config string) string {
	f, err := os.Open(config)
	if err != nil {
		return ""
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			in = line == `[remote "origin"]`
			continue
		}
		if k, v, ok := strings.Cut(line, "="); in && ok && strings.TrimSpace(k) == "url" {
			u := strings.TrimSuffix(strings.TrimRight(strings.TrimSpace(v), "/"), ".git")
			if i := strings.LastIndexAny(u, "/:"); i >= 0 {
				u = u[i+1:]
			}
			return u
		}
	}
	return ""
}

// slugify makes a thread slug of a name: lower case, each run of bytes
// other than a-z, 0-9, '.', '_' and '-' replaced by one '-', trimmed, at
// most 64 bytes. Bytes, not runes: every byte of a multi-byte character is
// outside the kept set, so a run of them is one run either way.
func slugify(s string) string {
	s = slugRuns(strings.ToLower(s))
	s = strings.Trim(s, "-._")
	if len(s) > 64 {
		s = strings.Trim(s[:64], "-._")
	}
	return s
}

// ProjectRoot is the work tree root around dir, or dir itself outside git.
func ProjectRoot(dir string) string {
	if root, _, _, ok := findGit(dir); ok {
		return root
	}
	return dir
}

// slugRuns replaces each run of bytes outside [a-z0-9._-] by one '-'.
func slugRuns(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	inRun := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			inRun = false
			continue
		}
		if !inRun {
			b.WriteByte('-')
			inRun = true
		}
	}
	return b.String()
}

// WorkThread is the thread a command run in dir works in when it is given
// none (docs/RETRIEVAL.md, "The current thread"): ProjectThread(dir), the
// thread the hooks give a session that runs there, when dir is inside the
// project that holds the vault (the folder around a vault named .memory)
// or when the vault knows the thread already (a row, an alias or a head of
// it). Otherwise none: a --vault that points elsewhere, used from a folder
// the vault has never heard of, does not narrow anything to a thread of
// that folder. Inside the project, a folder outside any git work tree
// (a subfolder of a project without git) or inside the vault itself stands
// for the project folder, unless the vault knows its own thread: so `cd
// api` in a plain project folder stays in the project's thread. known
// reports whether the vault has anything of the thread yet; a reader has
// nothing to find in a thread it does not know.
func WorkThread(v *vault.Vault, dir string) (thread string, known bool, err error) {
	sc, err := Load(v)
	if err != nil {
		return "", false, err
	}
	thread, known = WorkThreadIn(v, sc, dir)
	return thread, known, nil
}

// WorkThreadIn is WorkThread against a scope already loaded.
func WorkThreadIn(v *vault.Vault, sc *Scope, dir string) (thread string, known bool) {
	if dir == "" {
		return "", false
	}
	holder := ""
	if filepath.Base(v.Root) == vault.DirName {
		holder = filepath.Dir(v.Root)
	}
	inProject := holder != "" && within(dir, holder)
	if inProject && within(dir, v.Root) {
		dir = holder
	}
	thread, known = threadOf(v, sc, dir)
	if inProject && !known && dir != holder {
		if _, _, _, inGit := findGit(dir); !inGit {
			thread, known = threadOf(v, sc, holder)
		}
	}
	if !inProject && !known {
		return "", false
	}
	return thread, known
}

// threadOf is ProjectThread(dir), "" when dir has no name to make a slug
// of, and whether the vault knows it.
func threadOf(v *vault.Vault, sc *Scope, dir string) (string, bool) {
	th, err := vault.ParseThread(ProjectThread(dir))
	if err != nil {
		return "", false
	}
	return th.String(), KnowsThread(v, sc, th)
}

// within reports whether path is dir or inside it, comparing the paths
// with symbolic links resolved where they resolve (a working directory
// reached through a link names the same folder as the vault's path).
func within(path, dir string) bool {
	path, dir = realPath(path), realPath(dir)
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// realPath is p absolute, with its symbolic links resolved when it exists.
func realPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// KnowsThread reports whether the vault has anything of a thread: a row of
// it in the ledger, aliases in memvault.toml, or a head file.
func KnowsThread(v *vault.Vault, sc *Scope, t vault.Thread) bool {
	return sc.known[t.String()] || v.Config.Threads[t.String()].Aliases != nil || headExists(v, t)
}

func headExists(v *vault.Vault, t vault.Thread) bool {
	_, err := v.Files().Stat(v.Abs(t.HeadPath()))
	return err == nil
}
