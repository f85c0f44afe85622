package fileio

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// outsideRoot lists the functions outside this package that may reach
// files without a Root, each with the reason, keyed by "<path from the
// module root> <function>". Everything else that opens, reads, lists,
// stats, creates, removes or renames a file goes through a Root, so that
// no symbolic link inside the vault is ever followed. The reasons are of
// three kinds: the file is not the vault's (a harness's settings, a
// transcript the harness names, the project's own git repository, a file
// a person names); it is inside .git, which git owns and no clone can
// bring a link into; or the vault checked the folder for links before
// handing it over (the search index). An entry that no longer matches
// fails the test too, so the list stays exact.
var outsideRoot = map[string]string{
	// Not the vault's files.
	"cmd/memvault/internal/cli/cli.go Main":                    "a CPU profile where the person asked for it",
	"cmd/memvault/internal/cli/export.go runExport":            "the -o FILE a person names, outside the vault",
	"vault/executor/delegate.go scopeDirs":                     "a task's scope: the working folder an executor runs in, the project's",
	"fixtures/executor/fake/main.go main":                      "the test fixture writes /dev/full, to fail as a full disk does",
	"fixtures/executor/fake/main.go limitLine":                 "the test fixture reads /proc/self/limits",
	"cmd/memvault/internal/cli/gitignore.go ignoreVault":       "the project's own .gitignore, outside the vault",
	"cmd/memvault/internal/cli/gitignore.go workTree":          "the project's .git, found upwards from the working folder",
	"cmd/memvault/internal/cli/gitignore.go ignoredByPatterns": "the project's .gitignore files and info/exclude",
	"cmd/memvault/internal/cli/gitignore.go gitDir":            "the project's .git file of a linked worktree",
	"cmd/memvault/internal/cli/mergedriver.go runMergeDriver":  "git's temporary copies, checked by clones.ReadMergeVersions; OURS is written where git reads it back",
	"hooks/githooks.go ApplyGitHooks":                          "the project's git hooks",
	"hooks/githooks.go PlanGitHooks":                           "the project's git hooks",
	"hooks/install.go Apply":                                   "a harness's settings, which may be a person's link to their dotfiles",
	"hooks/doctor_codex.go ReadCodexTrust":                     "Codex's config.toml, the user's",
	"hooks/doctor_openclaw.go openClawRegistration":            "OpenClaw's config, the user's",
	"hooks/doctor_openclaw.go RunningOpenClawGateway":          "OpenClaw's gateway lock file, in its state folder",
	"hooks/doctor_openclaw.go processAlive":                    "/proc, for the gateway's pid and start time",
	"hooks/doctor_openclaw.go openClawGateway":                 "the plugin's files and OpenClaw's config, for their times",
	"hooks/doctor.go doctorHooks":                              "a harness's settings",
	"hooks/doctor_plugin.go pluginCurrent":                     "the plugin files memvault installed in a harness's folder",
	"hooks/doctor_mcp.go doctorMCP":                            "a harness's MCP config, and the binary it names",
	"hooks/doctor_mcp.go claudeRejected":                       "Claude Code's settings and ~/.claude.json",
	"hooks/install_mcp.go mcpTarget":                           "which of OpenCode's config files the project has",
	"hooks/install_mcp.go planMCP":                             "a harness's MCP config",
	"hooks/install.go planFile":                                "a harness's settings",
	"hooks/install.go planJSONHooks":                           "a harness's settings",
	"hooks/install_openclaw.go planOpenClaw":                   "a harness's plugin folder",
	"hooks/doctor.go sameFile":                                 "the memvault binary a harness config names",
	"vault/scope/project.go findGit":                           "the project's git repository",
	"vault/continuity/suspect.go projectOfVault":               "the project's .git, found upwards from the vault's folder (SUSPECT)",
	"vault/continuity/suspect.go missing":                      "a file a learning's prevention names, in the project (SUSPECT)",
	"vault/continuity/suspect.go grep":                         "the project's files, walked without following a link, the vault left out (SUSPECT)",
	"vault/continuity/suspect.go readHead":                     "a project file the walk found, opened with O_NOFOLLOW (SUSPECT)",
	"vault/scope/project.go originName":                        "the project's git config",
	"vault/gitrepo/mergedrivers.go MergeDriversStatus":         "the memvault binary git runs, and .git/config",
	"vault/vault.go Find":                                      "looking for a vault's .git from a working folder",
	"vault/vault.go InitWith":                                  "the vault's own folder, which may be a link the person chose",
	"vault/vault.go checkInitTarget":                           "the listing of the folder init is asked to make a vault of",
	"vault/vault.go hasMarker":                                 "Lstat (which follows no link) of memvault.toml and ledger/ in a candidate vault",
	// Inside .git, by git's rules.
	"vault/committed.go mergeInProgress":                 ".git/MERGE_HEAD",
	"vault/committed.go verifyStaged":                    ".git/MERGE_HEAD",
	"vault/gitrepo/mergedrivers.go MergeSetupPending":    ".git/config",
	"vault/gitrepo/mergedrivers.go editGitConfig":        ".git/config",
	"vault/gitrepo/mergedrivers.go gitConfigPath":        ".git, or the gitdir file of a worktree",
	"vault/vault.go initGit":                             ".git's first files",
	"vault/gitrepo/gc.go lockGitGC":                      ".git/gc.pid",
	"vault/gitrepo/gc.go pack":                           ".git/objects",
	"vault/gitrepo/gc.go writePack":                      ".git/objects",
	"vault/gitrepo/gc.go packCovered":                    ".git/objects/pack",
	"vault/gitrepo/gc.go packsChanged":                   ".git/objects/pack's modification time",
	"vault/gitrepo/repo.go packNames":                    ".git/objects/pack listed",
	"vault/gitrepo/gc.go reachable":                      ".git's refs",
	"vault/gitrepo/gc.go removeEmptyFanout":              ".git/objects",
	"vault/gitrepo/size.go Measure":                      ".git's size; WalkDir follows no link",
	"vault/gitrepo/size.go EstimateLoose":                ".git/objects/17 listed; DirEntry.Info is an lstat",
	"vault/gitrepo/gitindex.go updateIndex":              ".git/index",
	"vault/gitrepo/gitindex.go openIndex":                ".git/index",
	"vault/gitrepo/gitindex.go sameIndex":                ".git/index",
	"vault/gitrepo/gitindex.go splitIndexConfig":         ".git/config",
	"vault/gitrepo/index/split.go sharedIndex":           ".git/sharedindex.*",
	"vault/gitrepo/index/split.go mapFile":               ".git/sharedindex.*",
	"vault/gitrepo/index/split.go expireSharedIndexes":   ".git/sharedindex.*",
	"vault/gitrepo/index/split.go writeSplitOnNewShared": ".git/sharedindex.*",
	"vault/gitrepo/localserver.go Load":                  "a local remote's repository",
	"vault/gitrepo/localserver.go SetReference":          "a local remote's refs",
	"vault/gitrepo/locks.go casRef":                      ".git's refs",
	"vault/gitrepo/locks.go appendReflog":                ".git/logs",
	"vault/gitrepo/locks.go createLockFileUntil":         "git's lock files in .git",
	"vault/gitrepo/locks.go commit":                      "git's lock files in .git",
	"vault/gitrepo/locks.go release":                     "git's lock files in .git, and a marker in .locks, which prepareGitLock checked",
	"vault/gitrepo/locks.go prepareGitLock":              "a marker in .locks, checked for links first through a Root",
	"vault/gitrepo/locks.go take":                        "git's lock files in .git, a link of the marker prepareGitLock made",
	"vault/gitrepo/gcrun.go beat":                        ".locks/gc-run's time touched; the mark was written through a Root",
	"vault/gitrepo/gcrun.go ClearStaleGCLocks":           "git's lock files under .git; WalkDir follows no link",
	"vault/gitrepo/gcrun.go gcPidGone":                   ".git/gc.pid",
	"vault/gitrepo/gcrun_linux.go procStart":             "/proc, for a process's start time",
	"vault/gitrepo/gcrun_linux.go procAlive":             "/proc, for a process's state",
	"vault/gitrepo/gcrun_linux.go gitHasOpen":            "/proc, for git processes working in the vault",
	"vault/gitrepo/locks.go yieldToGit":                  ".git/index.lock, looked at only",
	"vault/gitrepo/locks.go removeStaleGitLocks":         "markers in .locks, which prepareGitLock checked first",
	"vault/gitrepo/merge.go failedGitMerge":              ".git/MERGE_HEAD",
	"vault/gitrepo/remote.go ResolveRemote":              "a remote given as a path",
	"vault/gitrepo/repo.go Open":                         ".git",
	"vault/gitrepo/repo.go Branch":                       ".git/HEAD",
	"vault/gitrepo/repo.go writeObject":                  ".git/objects",
	"vault/gitrepo/repo.go writeLoose":                   ".git/objects",
	"vault/gitrepo/repo.go discardCreated":               ".git/objects",
	// Checked by the vault before it hands the folder over.
	"index/index.go Create":   "an index folder the vault checked for links (vault.createIndex)",
	"index/index.go Open":     "an index folder the vault checked for links (vault.openIndex)",
	"index/index.go ReadMeta": "an index folder the vault checked for links",
	"index/index.go SaveMeta": "an index folder the vault checked for links",
	// A rename within one folder, which follows no link at either name.
	"vault/spool.go claim": "a live spool file renamed to its claim in the folder listed through a Root, the new name checked",
	// Walks that follow no link and read no file.
	"vault/gc/gc.go contentBytes": "sizes from WalkDir, which follows no link",
	"vault/nodes.go NodeIDs":      "names from WalkDir, which follows no link; the files are read through a Root",
}

// TestNoLinkFollowed holds the vault to fileio.Root: no code outside this
// package reaches a file with os's functions that open, read, list, stat,
// create, remove or rename, with filepath's walks, or with this package's
// writers that take a bare path, unless outsideRoot says why. Test files
// are free to.
func TestNoLinkFollowed(t *testing.T) {
	checkSources(t, sourceCheck{
		uses:    fileUses,
		allowed: outsideRoot,
		skip:    []string{"vault/vaulttest", "vault/testvault", "cmd/memvault/bench"}, // test helpers and benchmarks
		fix:     "reach the vault's files through a fileio.Root, or add the function to outsideRoot with the reason",
		stale:   "outsideRoot lists %q, which reaches no file without a Root any more: remove the entry",
	})
}

// fileUses returns the uses of file functions that take a bare path in
// one source file, one per function and callee.
func fileUses(t *testing.T, path string) []directWrite {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]string{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		pkgs[name] = p
	}
	barePath := map[string]map[string]bool{
		"os": set("ReadFile", "Open", "OpenFile", "ReadDir", "Stat", "Lstat", "MkdirAll", "Mkdir", "Remove", "RemoveAll",
			"Rename", "Truncate", "Chmod", "Chtimes", "Link", "Symlink", "CreateTemp", "MkdirTemp", "Create", "WriteFile", "DirFS", "OpenRoot"),
		"path/filepath": set("Walk", "WalkDir", "Glob"),
		"io/ioutil":     set("ReadFile", "WriteFile", "ReadDir", "TempFile", "TempDir"),
		"github.com/memvault/memvault/vault/fileio": set("WriteAtomic", "WriteAtomicIf", "WriteCache", "WriteKeepMode"),
	}
	var out []directWrite
	for _, decl := range f.Decls {
		fn := "(package level)"
		if fd, ok := decl.(*ast.FuncDecl); ok {
			fn = fd.Name.Name
		}
		seen := map[string]bool{}
		ast.Inspect(decl, func(n ast.Node) bool {
			s, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := s.X.(*ast.Ident)
			if !ok {
				return true
			}
			pkg := pkgs[id.Name]
			if barePath[pkg][s.Sel.Name] && !seen[pkg+s.Sel.Name] {
				seen[pkg+s.Sel.Name] = true
				out = append(out, directWrite{fn: fn, call: id.Name + "." + s.Sel.Name, line: fset.Position(n.Pos()).Line})
			}
			return true
		})
	}
	return out
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}
