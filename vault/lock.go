package vault

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
	"github.com/memvault/memvault/vault/gitrepo"
	"github.com/memvault/memvault/vault/units"
)

// Lease names the holder of the vault lock. The holder writes it beside
// the lock file once it has the lock and removes it before it lets go, so
// that a writer who cannot get the lock can say who has it. The lock itself
// is the flock: a lease left behind by a killed process names a process that
// is gone, or (its pid reused) one that does not hold the lock, and
// holderOf believes it only when the process it names is the holder.
type Lease struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Agent   string    `json:"agent,omitempty"`
	Session string    `json:"session,omitempty"`
	Command string    `json:"command,omitempty"`
	Since   time.Time `json:"since"`
}

// String names the holder for a person: "pid 4121 (memvault render,
// 1.2 s)", with the host when it is another machine's and the session when
// a hook holds the lock; "an unknown process" when not even its pid is
// known.
func (l Lease) String() string {
	if l.PID <= 0 {
		return "an unknown process"
	}
	s := fmt.Sprintf("pid %d", l.PID)
	if host, _ := os.Hostname(); l.Host != "" && l.Host != host {
		s += " on " + l.Host
	}
	var what []string
	if l.Command != "" {
		what = append(what, "memvault "+l.Command)
	} else {
		what = append(what, "no lease: not memvault, or it has just taken the lock")
	}
	if l.Session != "" {
		what = append(what, "session "+l.Session)
	}
	if !l.Since.IsZero() {
		what = append(what, HeldFor(l.Since))
	}
	return s + " (" + strings.Join(what, ", ") + ")"
}

// HeldFor is units.HeldFor: every lock's holder is named in its words.
func HeldFor(since time.Time) string { return units.HeldFor(since) }

const (
	lockFile  = ".locks/vault.lock"
	leaseFile = ".locks/vault.lease.json"
)

// A flock is per open file description, which already excludes goroutines
// that open the file separately; the mutex makes the exclusion explicit and
// cheap within one process, and orders goroutines fairly.
var (
	procLocksMu sync.Mutex
	procLocks   = map[string]*sync.Mutex{}
)

func procLock(root string) *sync.Mutex {
	procLocksMu.Lock()
	defer procLocksMu.Unlock()
	m, ok := procLocks[root]
	if !ok {
		m = new(sync.Mutex)
		procLocks[root] = m
	}
	return m
}

// Lock takes the vault's write lock for the holder the lease names (this
// process and host are filled in), waiting wait, or memvault.toml's lock
// timeout when wait is 0.
func (v *Vault) Lock(lease Lease, wait time.Duration) (release func(), err error) {
	if wait <= 0 {
		if wait, err = v.LockTimeout(); err != nil {
			return nil, err
		}
	}
	lease.PID = os.Getpid()
	lease.Host, _ = os.Hostname()
	return lockVault(v.Root, lease, wait)
}

// lockVault takes the vault's write lock, waiting at most timeout. The lock
// file is opened read-write and never deleted: deleting a lock file lets two
// processes hold "the" lock on two different inodes. The lease is written
// once the lock is held and removed before it is released, so that a lease
// on disk names the holder, or a holder that was killed.
func lockVault(root string, lease Lease, timeout time.Duration) (release func(), err error) {
	unlock, ok, err := flockWait(root, lockFile, procLock(root), timeout)
	// The automatic pack holds the lock as long as git takes, which on a
	// large vault can pass a person's wait: a writer that waits a second
	// or more (not a hook, which spools) waits on while the pack runs.
	for until := time.Now().Add(autoPackWait); err == nil && !ok && timeout >= time.Second &&
		time.Now().Before(until) && holderOf(root).Command == autoPackCommand; {
		unlock, ok, err = flockWait(root, lockFile, procLock(root), time.Second)
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, busyErr(root, timeout)
	}
	lease.Since = time.Now()
	path := filepath.Join(root, leaseFile)
	if data, err := json.Marshal(lease); err == nil {
		// The lease is informational: a failure to write it must not fail
		// the transaction, and a lost or torn one (a crash of the machine,
		// a reader meanwhile: it is written in place, so that a write
		// creates no file for it) does not parse, which only leaves a busy
		// error without the holder's name. So no fsync, no rename.
		_ = fileio.At(root).Overwrite(path, append(data, '\n'))
	}
	return func() {
		// Ours to empty: nobody else writes the lease while we hold the
		// lock. Left behind (a failed cut, a kill), it names a process
		// that no longer holds the lock, which holderOf sees.
		_ = fileio.At(root).Truncate(path, 0)
		unlock()
	}, nil
}

// LockFile takes the lock .locks/<name>.lock, apart from the vault lock,
// waiting at most wait; ok is false when the time ran out. Like the vault
// lock, the file is opened read-write and never deleted. The search index
// takes its own lock with it (vault/recall).
func (v *Vault) LockFile(name string, wait time.Duration) (release func(), ok bool, err error) {
	return flockWait(v.Root, ".locks/"+name+".lock", procLock(v.Root+"\x00"+name), wait)
}

// flockWait takes mu, then the flock on rel (under root), waiting at most
// timeout for both; ok is false when the time ran out.
func flockWait(root, rel string, mu *sync.Mutex, timeout time.Duration) (release func(), ok bool, err error) {
	deadline := time.Now().Add(timeout)
	if !tryLockUntil(mu, deadline) {
		return nil, false, nil
	}
	// flock opens the file itself, following links: the folder and the
	// file are checked first.
	fsys := fileio.At(root)
	if err := fsys.MkdirAll(filepath.Join(root, ".locks")); err != nil {
		mu.Unlock()
		return nil, false, fault.IO("create .locks", err)
	}
	if err := fsys.Check(filepath.Join(root, rel)); err != nil {
		mu.Unlock()
		return nil, false, err
	}
	fl := flock.New(filepath.Join(root, rel), flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(fileio.FilePerm))
	delay := time.Millisecond
	for {
		ok, err := fl.TryLock()
		if err != nil {
			mu.Unlock()
			return nil, false, fault.IO("lock "+rel, err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			mu.Unlock()
			return nil, false, nil
		}
		time.Sleep(delay)
		if delay < 16*time.Millisecond {
			delay *= 2
		}
	}
	return func() {
		_ = fl.Unlock()
		mu.Unlock()
	}, true, nil
}

func tryLockUntil(mu *sync.Mutex, deadline time.Time) bool {
	for delay := time.Millisecond; ; {
		if mu.TryLock() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay)
		if delay < 16*time.Millisecond {
			delay *= 2
		}
	}
}

// ReadLease reports whether the vault lock is held right now and, as far
// as can be told, by whom (holderOf).
func ReadLease(root string) (Lease, bool) {
	// flock opens the file itself, following links: it is checked first.
	if fileio.At(root).Check(filepath.Join(root, lockFile)) != nil {
		return Lease{}, false
	}
	fl := flock.New(filepath.Join(root, lockFile), flock.SetFlag(os.O_RDWR))
	ok, err := fl.TryLock()
	if err != nil {
		return Lease{}, false
	}
	if ok {
		_ = fl.Unlock()
		return Lease{}, false
	}
	return holderOf(root), true
}

// holderOf names the holder of the vault lock, which the caller found held.
// The lease says who took the lock, but a lease can be stale: its writer
// killed after it took the lock, the next holder not yet past writing its
// own, or the holder not memvault at all (a person's flock). So the lease is
// believed only when the process it names holds the lock: the holder's pid
// from the kernel's table of locks (Linux's /proc/locks), else, where the
// kernel does not say, a lease of this host whose process still runs. A
// lease that fails the check gives way to the kernel's pid alone, or to an
// unknown holder.
func holderOf(root string) Lease {
	pid := fileio.FlockHolder(root, filepath.Join(root, lockFile))
	var l Lease
	data, err := fileio.At(root).ReadFile(filepath.Join(root, leaseFile))
	if err != nil || json.Unmarshal(data, &l) != nil || l.PID <= 0 {
		return Lease{PID: pid}
	}
	host, _ := os.Hostname()
	if pid > 0 {
		if l.PID != pid || l.Host != host {
			return Lease{PID: pid}
		}
		return l
	}
	if l.Host == host && errors.Is(syscall.Kill(l.PID, 0), syscall.ESRCH) {
		return Lease{}
	}
	return l
}

func busyErr(root string, waited time.Duration) error {
	e := fault.New(ErrBusy, "vault busy: held by %s; gave up after %s", holderOf(root), waited)
	return e.WithHint("retry, or raise the wait with MEMVAULT_LOCK_TIMEOUT or [lock] timeout in memvault.toml")
}

// IsBusy reports whether err is a lock timeout.
func IsBusy(err error) bool { return errors.Is(err, ErrBusy) }

// The automatic pack after a write: git's gc --auto for memvault, run
// with the vault lock handed to it (memvault gc itself is vault/gc).

// DefaultAutoPackLoose is the estimate of loose objects past which a
// write packs them, a sixth of git's gc.auto: memvault's loose objects are
// whole ledger segments and transcript parts (2 KiB each on average on the
// suite's week vault, 4 KiB of disk), and the loose ones are what a vault
// as written holds beyond its packs, so waiting for 6,700 leaves some 14
// MiB loose for 3 MiB of content. A pack of a thousand objects takes a
// fraction of a second (docs/PERFORMANCE.md).
const DefaultAutoPackLoose = 1024

// autoPackCommand is the automatic pack's lease; a writer waiting a
// second or more waits on behind it, at most autoPackWait in all.
const (
	autoPackCommand = "gc --auto (git gc)"
	autoPackWait    = 5 * time.Minute
)

// AutoPacks reports whether a write packs the loose git objects itself
// once they pass the threshold: [gc] auto in memvault.toml (on unless
// false) and git on the PATH. Without git the vault does not pack itself
// (the in-process engine packs every object, too slow to run after a
// write) and the gc hint (vault/gc) says when memvault gc would help.
func (v *Vault) AutoPacks() bool {
	if a := v.Config.GC.Auto; a != nil && !*a {
		return false
	}
	return gitrepo.HasGitBinary()
}

// autoPack runs after a transaction that committed, once the vault lock is
// released: git's gc --auto for memvault. When the loose objects pass the
// threshold (estimated from one folder of 256, as git does: one directory
// read, vault/gc BenchmarkAdvice), it takes the vault lock again without waiting
// (a writer that holds it will come here after its own commit) and hands
// it to a detached `git gc --auto` (gitrepo.StartAutoGC), which holds it
// while it packs. So a pack never runs beside a memvault writer, as
// memvault gc never does (DESIGN §3); writers that come meanwhile wait for
// the lock, or spool if they are hooks, as they would behind any writer.
// Nothing here fails the write: a pack that does not start is tried again
// by the next one.
func (v *Vault) autoPack() {
	threshold := v.AutoPackLoose()
	if !gitrepo.PastAuto(filepath.Join(v.Root, ".git"), threshold) || !v.AutoPacks() {
		return
	}
	mu := procLock(v.Root)
	if !mu.TryLock() {
		return
	}
	defer mu.Unlock()
	path := filepath.Join(v.Root, lockFile)
	f, err := v.Files().Open(path) // flock needs no write access
	if err != nil {
		return
	}
	defer f.Close() // the child keeps its own descriptor, and the lock
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return
	}
	lease := Lease{PID: os.Getpid(), Agent: v.Config.Agent, Command: autoPackCommand, Since: time.Now()}
	lease.Host, _ = os.Hostname()
	lp := filepath.Join(v.Root, leaseFile)
	if data, err := json.Marshal(lease); err == nil {
		_ = v.Files().Overwrite(lp, append(data, '\n'))
	}
	if v.Repo.StartAutoGC(f, threshold) != nil {
		_ = v.Files().Truncate(lp, 0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
}

// WaitAutoPack waits, at most timeout, until no automatic pack holds the
// vault lock, by taking the lock and letting it go: for a program that
// measures or copies the vault after its writes.
func (v *Vault) WaitAutoPack(timeout time.Duration) error {
	release, err := v.Lock(Lease{Agent: v.Config.Agent, Command: "wait"}, timeout)
	if err != nil {
		return err
	}
	release()
	return nil
}

// AutoPackLoose is the estimate of loose objects past which a write packs
// them: [gc] auto_loose, else DefaultAutoPackLoose. The status reports it
// (vault/gc).
func (v *Vault) AutoPackLoose() int {
	if n := v.Config.GC.AutoLoose; n > 0 {
		return n
	}
	return DefaultAutoPackLoose
}
