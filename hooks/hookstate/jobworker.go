package hookstate

// The job worker's lock. A summary that a model writes takes seconds, so no
// hook waits for it: a hook that finds such a job starts a worker, a
// process of its own in a session of its own (`memvault jobs run
// --background`), and returns. One worker at a time: the worker holds a
// flock on .locks/jobs-worker.lock for its life. The hook takes the lock
// first, without waiting, and starts the worker only when it got it,
// handing it the lock's descriptor (the child inherits the open file
// description, and with it the lock); so two hooks never start two
// workers, and a worker killed at any point releases the lock with its
// last descriptor. `memvault jobs run` in the foreground waits for the
// lock too.
//
// The worker writes a lease beside the lock (its pid and since when), so
// that status can name it; the lock, not the lease, says whether a worker
// runs.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

const (
	workerLockFile  = ".locks/jobs-worker.lock"
	workerLeaseFile = ".locks/jobs-worker.json"
)

// JobWorker is the worker lock, held (or handed to a worker process) by
// whoever got it.
type JobWorker struct {
	v    *vault.Vault
	f    *os.File
	held bool
}

// openWorkerLock opens the worker's lock file, created if need be. Like
// the vault lock it is opened read-write and never deleted: deleting a
// lock file lets two holders lock two different inodes.
func openWorkerLock(v *vault.Vault) (*os.File, error) {
	if err := v.Files().MkdirAll(filepath.Join(v.Root, ".locks")); err != nil {
		return nil, fault.IO("create .locks", err)
	}
	f, err := v.Files().OpenFile(filepath.Join(v.Root, filepath.FromSlash(workerLockFile)), os.O_CREATE|os.O_RDWR, fileio.FilePerm)
	if err != nil {
		return nil, fault.IO("open "+workerLockFile, err)
	}
	return f, nil
}

// TryJobWorker takes the worker lock without waiting; ok is false when a
// worker holds it.
func TryJobWorker(v *vault.Vault) (w *JobWorker, ok bool, err error) {
	f, err := openWorkerLock(v)
	if err != nil {
		return nil, false, err
	}
	w = &JobWorker{v: v, f: f}
	if ok, err = w.Relock(); err != nil || !ok {
		f.Close()
		return nil, false, err
	}
	return w, true, nil
}

// WaitJobWorker takes the worker lock, waiting for the worker that holds
// it for as long as wait returns true (it is asked every 50 ms or so;
// `jobs run` stops waiting when interrupted).
func WaitJobWorker(v *vault.Vault, wait func() bool) (*JobWorker, error) {
	for {
		w, ok, err := TryJobWorker(v)
		if err != nil || ok {
			return w, err
		}
		if !wait() {
			return nil, fault.New(vault.ErrBusy, "jobs: a worker holds the queue: %s", JobWorkerStatus(v))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// AdoptJobWorker takes over the worker lock a hook handed to this process
// as descriptor fd, locked. It checks that fd is the vault's worker lock
// file and that the lock is held through it, keeps it from the processes
// this one starts (an executor must not hold the lock after its worker is
// killed), and writes the worker's lease.
func AdoptJobWorker(v *vault.Vault, fd uintptr) (*JobWorker, error) {
	// Checked before it is wrapped: an *os.File closes its descriptor
	// when it is closed or collected, and a descriptor 3 that is not the
	// lock is someone else's (the runtime's own, when nothing was handed
	// over).
	var got syscall.Stat_t
	if err := syscall.Fstat(int(fd), &got); err != nil {
		return nil, fault.New(vault.ErrInvalid, "jobs worker: no lock handed over as descriptor %d: %v", fd, err)
	}
	want, err := v.Files().Stat(filepath.Join(v.Root, filepath.FromSlash(workerLockFile)))
	st, ok := sysStat(want)
	if err != nil || !ok || st.Dev != got.Dev || st.Ino != got.Ino {
		return nil, fault.New(vault.ErrInvalid, "jobs worker: descriptor %d is not %s", fd, workerLockFile)
	}
	syscall.CloseOnExec(int(fd))
	w := &JobWorker{v: v, f: os.NewFile(fd, workerLockFile)}
	// The lock is this open file description's already: taking it again
	// through it succeeds at once; it fails when the descriptor was not
	// the holder's.
	ok, err = w.Relock()
	if err != nil {
		w.f.Close()
		return nil, err
	}
	if !ok {
		w.f.Close()
		return nil, fault.New(vault.ErrBusy, "jobs worker: the lock was not handed over: another worker holds it")
	}
	return w, nil
}

// sysStat is info's stat_t, where the system gives one.
func sysStat(info os.FileInfo) (*syscall.Stat_t, bool) {
	if info == nil {
		return nil, false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	return st, ok
}

// File is the lock's descriptor, to hand to the worker process (its first
// ExtraFiles entry, descriptor 3).
func (w *JobWorker) File() *os.File { return w.f }

// Handoff closes this process's descriptor without unlocking: the worker
// process it started with File holds the lock now.
func (w *JobWorker) Handoff() {
	w.held = false
	w.f.Close()
}

// Relock takes the lock again, without waiting, after Unlock; ok is false
// when another worker took it meanwhile. The lease is written when it
// succeeds.
func (w *JobWorker) Relock() (bool, error) {
	err := syscall.Flock(int(w.f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	if err != nil {
		return false, fault.IO("lock "+workerLockFile, err)
	}
	w.held = true
	lease := vault.Lease{PID: os.Getpid(), Command: "jobs run", Since: time.Now()}
	lease.Host, _ = os.Hostname()
	if data, err := json.Marshal(lease); err == nil {
		// Informational, like the vault lock's lease.
		_ = w.v.Files().WriteCache(filepath.Join(w.v.Root, filepath.FromSlash(workerLeaseFile)), append(data, '\n'))
	}
	return true, nil
}

// Unlock lets the lock go and keeps the descriptor, so that the worker can
// look at the queue once more and Relock: a job queued while the lock was
// held, by a hook that therefore started no worker, is found either by
// that last look or by a worker that hook's successor starts.
func (w *JobWorker) Unlock() {
	if !w.held {
		return
	}
	_ = w.v.Files().Remove(filepath.Join(w.v.Root, filepath.FromSlash(workerLeaseFile)))
	_ = syscall.Flock(int(w.f.Fd()), syscall.LOCK_UN)
	w.held = false
}

// Release unlocks and closes the lock.
func (w *JobWorker) Release() {
	w.Unlock()
	w.f.Close()
}

// WorkerState says whether a job worker runs, and which.
type WorkerState struct {
	Running bool      `json:"running"`
	PID     int       `json:"pid,omitempty"`
	Since   time.Time `json:"since,omitzero"`
}

// String says it for a person: "pid 4121, for 3.2 s", "none".
func (s WorkerState) String() string {
	switch {
	case !s.Running:
		return "none"
	case s.PID <= 0:
		return "an unknown process"
	case s.Since.IsZero():
		return fmt.Sprintf("pid %d", s.PID)
	}
	return fmt.Sprintf("pid %d, for %s", s.PID, vault.HeldFor(s.Since))
}

// JobWorkerStatus says whether a job worker holds the lock now, without
// taking it (a status that took it, however briefly, could make a hook
// think a worker runs and start none): from the worker's lease when the
// process it names still runs on this host, else from the kernel's table
// of locks (which may name the hook that took the lock and handed it
// over, or nobody in a pid namespace where that hook is gone).
func JobWorkerStatus(v *vault.Vault) WorkerState {
	var l vault.Lease
	data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(workerLeaseFile)))
	host, _ := os.Hostname()
	if err == nil && json.Unmarshal(data, &l) == nil && l.PID > 0 && l.Host == host &&
		!errors.Is(syscall.Kill(l.PID, 0), syscall.ESRCH) {
		return WorkerState{Running: true, PID: l.PID, Since: l.Since}
	}
	if v.Files().Check(filepath.Join(v.Root, filepath.FromSlash(workerLockFile))) != nil {
		return WorkerState{}
	}
	if pid := fileio.FlockHolder(v.Root, filepath.Join(v.Root, filepath.FromSlash(workerLockFile))); pid > 0 {
		return WorkerState{Running: true, PID: pid}
	}
	return WorkerState{}
}

// JobQueue is what status shows of the queue: cheap, the folder listed
// and no job read.
type JobQueue struct {
	Jobs   int         `json:"jobs"`
	Oldest time.Time   `json:"oldest,omitzero"`
	Worker WorkerState `json:"worker"`
}

// JobQueueStatus counts the queued jobs, finds the oldest and asks
// whether a worker runs.
func JobQueueStatus(v *vault.Vault) (JobQueue, error) {
	names, err := jobFiles(v)
	if err != nil {
		return JobQueue{}, err
	}
	q := JobQueue{Jobs: len(names), Worker: JobWorkerStatus(v)}
	if len(names) > 0 {
		q.Oldest = jobTime(names[0])
	}
	return q, nil
}
