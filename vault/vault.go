// Package vault is memvault's storage engine: the .memory/ folder, its git
// repository, the hash-chained ledger, and the single transaction through
// which every change is made. Commands never write files themselves; they
// open a Vault and call Update.
package vault

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/redact"
)

// DirName is the name of the vault folder that Find looks for.
const DirName = ".memory"

// defaultConfigText is what init writes: every setting with its default,
// commented so that a person can see what exists without reading the docs.
const defaultConfigText = `# memvault vault configuration. Every setting is optional; the values shown
# are the defaults. See docs/API.md for what each one does.
version = 1

# The agent id used when neither --agent nor MEMVAULT_AGENT is given.
agent = "default"

[ledger]
# A ledger segment is closed past this many bytes (and at the end of a day).
segment_bytes = 65536

[lock]
# How long a writer waits for the vault lock before failing with "vault busy".
timeout = "10s"

[gc]
# After a write, when the loose git objects pass auto_loose, pack them with
# git gc --auto in the background (needs git on the PATH).
auto = true
auto_loose = 1024

[git]
# Identity memvault commits with.
name = "memvault"
email = "memvault@localhost"

[budgets]
memory_tokens = 1000
continuity_words = 500

[transcripts]
# A transcript part is closed past this many bytes; the session continues in
# <session>.<n>.jsonl.
part_bytes = 262144

[redact]
# Secrets are replaced by [REDACTED:<kind>] before anything is written.
enabled = true
# Turn off built-in rules by kind: aws-access-key, api-key, github-token,
# slack-token, private-key, bearer-token, secret-assignment.
disable = []
# Add rules: kind = "regular expression".
[redact.extra]
`

const gitignoreText = `# Derived state: caches, locks and logs, all rebuildable from the files above.
/.state/
/.index/
/.locks/
/.logs/
`

// Vault is an open .memory/ folder.
type Vault struct {
	Root   string // absolute path of the .memory/ folder
	Config Config
	Rules  *redact.Rules // nil when redaction is off
	Repo   *gitrepo.Repo
	Clock  func() time.Time // nil: time.Now; tests move time forward
	// RecallStep bounds what a recall indexes before it searches; 0 is
	// recallCatchUpBytes (tests set less, to see the bound in fewer bytes).
	RecallStep int64
	// StopAt is for tests: when set, a transaction calls it between its
	// steps ("staged": the files written, no event yet; "sealed": the
	// events appended, no commit; "folded": done, the spool's claims not
	// yet removed), and a test panics in it to stop the transaction the
	// way a kill does. It is a field of the vault, not of the package, so
	// that a test stops only the transactions of the vault it opened.
	StopAt func(step string)
	// slots is what the features built on the engine keep per open vault
	// (Slot), under slotsMu: hooks and goroutines share one handle.
	slotsMu sync.Mutex
	slots   map[any]any
	// Binary is the memvault executable git's merge driver runs. When set
	// (the CLI and the hooks set it), the first write in a clone that has
	// never been written to registers the driver in .git/config, so that a
	// fresh clone's first `git pull` already merges with it.
	Binary string
	// Progress receives the steps of long work (gc, import, reindex,
	// verify, sync) for a person to watch; nil reports nothing
	// (Progress, below).
	Progress Progress
	// Warn, when set, is told each problem a transaction's fold of the
	// spool met (a torn record, a file it could not read or remove): never
	// fatal, and also one of the transaction's Result.Warnings, which a
	// caller may drop or, a hook, never print. Whoever opens the vault
	// sends them to the hook log, so that they reach the person debugging
	// the hooks that spooled; nil leaves them to the Result alone.
	Warn func(line string)
	// configErr is why memvault.toml could not be read, for a vault opened
	// with OpenForCapture: it runs on defaults, appends to transcripts,
	// and refuses every structured write with this error.
	configErr error
	// fallbackConfig is the memvault.toml text a vault opened for capture
	// runs on instead of the broken file (nil: the file is read).
	fallbackConfig []byte
}

// Find returns the vault to use: dir when given (it must exist), otherwise
// the nearest .memory/ folder upward from start.
func Find(dir, start string) (string, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fault.IO("vault "+dir, err)
		}
		if info, err := os.Stat(filepath.Join(abs, ".git")); err != nil || !info.IsDir() {
			e := fault.New(ErrNotFound, "vault: no vault at %s", abs)
			return "", e.WithHint("create one with: memvault --vault %s init", dir)
		}
		if !hasMarker(abs) {
			e := fault.New(ErrNotFound, "vault: %s is a git repository but not a memvault vault (no %s, no %s/)", abs, ConfigFile, "ledger")
			return "", e.WithHint("memvault keeps its memory in a repository of its own: name a vault, or create one in a new folder with: memvault --vault DIR init")
		}
		return abs, nil
	}
	abs, err := filepath.Abs(start)
	if err != nil {
		return "", fault.IO("vault", err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		cand := filepath.Join(d, DirName)
		if info, err := os.Stat(filepath.Join(cand, ".git")); err == nil && info.IsDir() && hasMarker(cand) {
			return cand, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	e := fault.New(ErrNotFound, "vault: no %s folder in %s or any parent", DirName, abs)
	return "", e.WithHint("run memvault init to create one here, or pass --vault DIR")
}

// checkInitTarget refuses to make a vault of a folder that holds something
// else: a project's repository (memvault would commit onto its branch),
// unless adopt says it is meant, or files. A missing or empty folder, a
// vault (init is safe to run again) and a git repository without commits
// (made for the vault, or cloned from an empty remote) are fine.
func checkInitTarget(root string, adopt bool) error {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) || hasMarker(root) {
		return nil
	}
	if err != nil {
		return fault.IO("init: "+root, err)
	}
	if slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == ".git" }) {
		r, err := gitrepo.Open(root)
		if err != nil {
			return err
		}
		if head, err := r.Head(); err == nil && head.IsZero() || adopt {
			return nil // its files are the repository's
		}
		e := fault.New(ErrConflict, "init: %s is a git repository with history, not a memvault vault", root)
		return e.WithHint("memvault keeps its memory in a repository of its own: use a new folder (by default .memory/ inside the project), or pass --adopt to make a vault of this repository on purpose")
	}
	if len(entries) > 0 {
		e := fault.New(ErrConflict, "init: %s is not empty and not a vault", root)
		return e.WithHint("use a new folder (by default .memory/ inside the project)")
	}
	return nil
}

// hasMarker reports whether the git repository at root is a memvault vault:
// it has memvault.toml or the ledger folder. Either may be missing for a
// while (a person deleted the config; a vault's first transaction has not
// run), not both: a project's own repository has neither, and memvault must
// never commit into it.
func hasMarker(root string) bool {
	for _, name := range []string{ConfigFile, "ledger"} {
		if _, err := os.Lstat(filepath.Join(root, name)); err == nil {
			return true
		}
	}
	return false
}

// Open opens the vault at root, as returned by Find.
func Open(root string) (*Vault, error) {
	r, err := gitrepo.Open(root)
	if err != nil {
		return nil, err
	}
	v := &Vault{Root: root, Repo: r}
	if err := v.loadConfig(); err != nil {
		return nil, err
	}
	return v, nil
}

// OpenForCapture opens the vault at root like Open, except that a
// memvault.toml that does not parse does not stop it: the vault runs on the
// configuration HEAD commits (the last one that was committed, so the
// agent and the redaction rules a person added still hold: a prompt must
// not be stored with a secret their rule would have caught), or on the
// defaults when that one does not parse either; transcript lines are still
// appended (capture never stops), and every transaction that would append
// an event or write a file is refused with the configuration's error
// (Health reports it). Hooks open vaults this way; commands use Open, so a
// person sees the error at once.
func OpenForCapture(root string) (*Vault, error) {
	v, err := Open(root)
	if err == nil || !errors.Is(err, ErrInvalid) {
		return v, err
	}
	r, rerr := gitrepo.Open(root)
	if rerr != nil {
		return nil, rerr
	}
	v = &Vault{Root: root, Repo: r}
	if text, ok := committedConfig(r); ok && v.applyConfig(text) == nil {
		v.fallbackConfig = []byte(text)
	} else if derr := v.applyConfig(""); derr != nil {
		return nil, derr
	} else {
		v.fallbackConfig = []byte{}
	}
	v.configErr = err
	return v, nil
}

// Abs turns a vault path into a file-system path.
func (v *Vault) Abs(r RelPath) string { return filepath.Join(v.Root, filepath.FromSlash(r.String())) }

// Init creates a vault at root (a path ending in .memory, normally) or
// completes a partial one: the folder, its git repository on branch main,
// the layout, memvault.toml, .gitignore and .gitattributes (which names
// memvault's merge driver; the driver itself is registered in .git/config
// by the command line, which knows where its binary is). It never overwrites a file that
// exists, so running it again is safe. created reports whether anything was
// committed.
func Init(root string) (v *Vault, created bool, err error) {
	return InitWith(root, InitOptions{})
}

// InitOptions change what Init accepts.
type InitOptions struct {
	// Adopt makes a vault of a git repository that already has history
	// (the history is kept). Without it such a repository is refused: it
	// is more often a project's own repository named by mistake.
	Adopt bool
	// Policy records the default policy (DefaultRules) as the new vault's
	// first event, so that its ledger alone says who may write what
	// (`memvault init` sets it; docs/POLICY.md). A vault that has a
	// commit already gets nothing: without a policy event it is held to
	// the same default, built in.
	Policy bool
}

// InitWith is Init with options.
func InitWith(root string, o InitOptions) (v *Vault, created bool, err error) {
	root, err = filepath.Abs(root)
	if err != nil {
		return nil, false, fault.IO("init", err)
	}
	if info, err := os.Stat(root); err == nil && !info.IsDir() {
		return nil, false, fault.New(ErrConflict, "init: %s exists and is not a folder", root)
	}
	if err := checkInitTarget(root, o.Adopt); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(root, fileio.DirPerm); err != nil {
		return nil, false, fault.IO("init: create "+root, err)
	}
	if err := initGit(root); err != nil {
		return nil, false, err
	}
	for _, d := range []string{"ledger", "threads", "nodes", "transcripts", ".state", ".locks", ".logs"} {
		if err := fileio.At(root).MkdirAll(filepath.Join(root, d)); err != nil {
			return nil, false, fault.IO("init: create "+d, err)
		}
	}
	v, err = Open(root)
	if err != nil {
		return nil, false, err
	}
	var files []struct {
		rel  RelPath
		text string
	}
	for _, f := range []struct {
		rel  RelPath
		text string
	}{{MustRel(ConfigFile), defaultConfigText}, {MustRel(".gitignore"), gitignoreText},
		{MustRel(gitrepo.GitattributesFile), gitrepo.GitattributesText()}} {
		if _, err := v.Files().Stat(v.Abs(f.rel)); errors.Is(err, fs.ErrNotExist) {
			files = append(files, f)
		}
	}
	head, err := v.Repo.Head()
	if err != nil {
		return nil, false, err
	}
	if len(files) == 0 && !head.IsZero() {
		return v, false, nil
	}
	_, err = v.Update(TxOptions{Command: "init", Force: true}, func(tx *Tx) error {
		for _, f := range files {
			tx.WriteFile(f.rel, []byte(f.text))
		}
		if o.Policy && head.IsZero() {
			ev := PolicyEvent(DefaultRules())
			ev.Source = SourceCLI
			tx.Append(ev)
		}
		tx.Subject("init: memvault vault")
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// initGit creates the repository unless one exists. It writes the few files
// git needs by hand rather than through go-git's PlainInit, to control
// permissions and the initial branch without touching the user's git config.
func initGit(root string) error {
	gitDir := filepath.Join(root, ".git")
	if _, err := os.Stat(filepath.Join(gitDir, "HEAD")); err == nil {
		return nil
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags", "info", "hooks"} {
		if err := os.MkdirAll(filepath.Join(gitDir, filepath.FromSlash(d)), fileio.DirPerm); err != nil {
			return fault.IO("init: create .git", err)
		}
	}
	files := []struct{ name, text string }{
		{"config", "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"},
		{"description", "memvault vault\n"},
		{"info/exclude", "# memvault: see .gitignore\n"},
		{"HEAD", "ref: refs/heads/main\n"}, // last: its presence marks a repository
	}
	for _, f := range files {
		if err := fileio.WriteAtomic(filepath.Join(gitDir, filepath.FromSlash(f.name)), []byte(f.text)); err != nil {
			return err
		}
	}
	return nil
}

// Head returns the vault's current commit hash ("" before the first commit).
func (v *Vault) Head() (string, error) {
	h, err := v.Repo.Head()
	if err != nil || h.IsZero() {
		return "", err
	}
	return h.String(), nil
}

// Log calls fn for each commit from HEAD along first parents until fn
// returns false.
func (v *Vault) Log(fn func(gitrepo.CommitInfo) bool) error { return v.Repo.Log(fn) }

// ShortHash abbreviates a commit hash the way git log --oneline does.
func ShortHash(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return h
}

func (v *Vault) Now() time.Time {
	if v.Clock != nil {
		return v.Clock()
	}
	return time.Now()
}

// Slot returns what this open vault keeps under key, made by init on the
// first call: a feature built on the engine keeps its state per open vault
// here (a counter that keeps the names of the files it writes in order)
// under a key of an unexported type of its own, which no other package can
// name, as it keeps its state per transaction in Tx.Slot. The engine knows
// none of them, and a vault opened again starts without them. Safe for concurrent
// use; init runs under the slots' lock, so it should be quick.
func (v *Vault) Slot(key any, init func() any) any {
	v.slotsMu.Lock()
	defer v.slotsMu.Unlock()
	if s, ok := v.slots[key]; ok {
		return s
	}
	if v.slots == nil {
		v.slots = map[any]any{}
	}
	s := init()
	v.slots[key] = s
	return s
}

// Error is a classified error with an optional hint the user can act on. It
// is fault.Error, named here so that callers of the vault need not import
// fault to build or inspect one.
type Error = fault.Error

// The error classes every command maps onto an exit code; see fault for what
// each one means.
var (
	// ErrInvalid marks input the user must change.
	ErrInvalid = fault.ErrInvalid
	// ErrNotFound marks a missing vault, event or file.
	ErrNotFound = fault.ErrNotFound
	// ErrConflict marks a request that contradicts the vault's state.
	ErrConflict = fault.ErrConflict
	// ErrBusy marks a lock that could not be taken in time.
	ErrBusy = fault.ErrBusy
	// ErrCorrupt marks a ledger or repository that fails verification.
	ErrCorrupt = fault.ErrCorrupt
	// ErrIO marks a failure of the file system underneath the vault.
	ErrIO = fault.ErrIO
	// ErrRemote marks a sync remote that cannot be used.
	ErrRemote = fault.ErrRemote
	// ErrForbidden marks a write the vault's policy refuses.
	ErrForbidden = fault.ErrForbidden
)

// HintOf returns the hint carried by err, or "".
func HintOf(err error) string { return fault.HintOf(err) }

func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// Progress is how long work says how far it has got. The vault never
// prints: gc, import, reindex, verify and sync report steps to the vault's
// Progress when one is set, and the command line draws them on a terminal
// (cmd/memvault/internal/cli/progress.go). Hooks never set one, so the
// reports cost them a nil check.
//
// It is a field of the Vault rather than an option of each call because
// the long operations call each other (sync verifies and reindexes, import
// catches the index up): one reporter set on the handle reaches them all,
// and Verify and Import keep the signatures their many callers use.
type Progress func(Step)

// Step is one report of long work: Phase says what is being done ("gc:
// packing objects"), Done how many Units of it are done out of Total (0
// when the total is not known in advance).
type Step struct {
	Phase string
	Done  int64
	Total int64
	// Unit names what is counted: "objects", "files", "segments", or
	// "bytes", which a renderer prints in binary units.
	Unit string
}

// Step reports a step when p is set. It is called often (once per object
// in gc's walk); the renderer throttles what it draws.
func (p Progress) Step(phase, unit string, done, total int64) {
	if p != nil {
		p(Step{Phase: phase, Done: done, Total: total, Unit: unit})
	}
}
