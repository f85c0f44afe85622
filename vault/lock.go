package vault

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofrs/flock"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// Lease names the holder of the vault lock. It sits beside the lock file so
// that a writer who cannot get the lock can say who has it. The lock itself
// is the flock: a lease left behind by a killed process is harmless, because
// the kernel released that process's flock when it died.
type Lease struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Agent   string    `json:"agent,omitempty"`
	Session string    `json:"session,omitempty"`
	Command string    `json:"command,omitempty"`
	Since   time.Time `json:"since"`
}

func (l Lease) String() string {
	s := fmt.Sprintf("pid %d on %s", l.PID, l.Host)
	if l.Command != "" {
		s += " running " + l.Command
	}
	if l.Agent != "" {
		s += ", agent " + l.Agent
	}
	if l.Session != "" {
		s += ", session " + l.Session
	}
	if !l.Since.IsZero() {
		s += ", since " + l.Since.UTC().Format(time.RFC3339)
	}
	return s
}

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

// lock takes the vault's write lock for the holder the lease names (this
// process and host are filled in), waiting wait, or memvault.toml's lock
// timeout when wait is 0.
func (v *Vault) lock(lease Lease, wait time.Duration) (release func(), err error) {
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
// processes hold "the" lock on two different inodes.
func lockVault(root string, lease Lease, timeout time.Duration) (release func(), err error) {
	release, ok, err := flockWait(root, lockFile, procLock(root), timeout)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, busyErr(root, timeout)
	}
	lease.Since = time.Now()
	if data, err := json.Marshal(lease); err == nil {
		// The lease is informational: a failure to write it must not fail
		// the transaction, and after a crash of the machine a lost or torn
		// one only leaves a busy error without the holder's name, so it is
		// written as a cache, without fsync.
		_ = fileio.At(root).WriteCache(filepath.Join(root, leaseFile), append(data, '\n'))
	}
	return release, nil
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

// ReadLease returns the last recorded holder of the vault lock and whether
// the lock is held right now.
func ReadLease(root string) (Lease, bool) {
	var l Lease
	data, err := fileio.At(root).ReadFile(filepath.Join(root, leaseFile))
	if err == nil {
		_ = json.Unmarshal(data, &l)
	}
	if fileio.At(root).Check(filepath.Join(root, lockFile)) != nil {
		return l, false
	}
	fl := flock.New(filepath.Join(root, lockFile), flock.SetFlag(os.O_RDWR))
	ok, err := fl.TryLock()
	if err != nil {
		return l, false
	}
	if ok {
		_ = fl.Unlock()
		return l, false
	}
	return l, true
}

func busyErr(root string, waited time.Duration) error {
	holder := "another process"
	if l, _ := ReadLease(root); l.PID != 0 {
		holder = l.String()
	}
	e := fault.New(ErrBusy, "vault busy: held by %s; gave up after %s", holder, waited)
	return e.WithHint("retry, or raise the wait with MEMVAULT_LOCK_TIMEOUT or [lock] timeout in memvault.toml")
}

// IsBusy reports whether err is a lock timeout.
func IsBusy(err error) bool { return errors.Is(err, ErrBusy) }
