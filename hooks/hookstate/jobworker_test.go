package hookstate

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/testvault"
)

// One worker lock: a second taker is refused while it is held, gets it
// once it is let go, and status names the holder without taking the lock
// (a status that took it would make a hook start no worker).
func TestJobWorkerLockExcludes(t *testing.T) {
	v := testvault.New(t)
	if s := JobWorkerStatus(v); s.Running {
		t.Fatalf("a worker before any: %+v", s)
	}
	w, ok, err := TryJobWorker(v)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, err := TryJobWorker(v); err != nil || ok {
		t.Fatalf("a second holder: %v %v", ok, err)
	}
	s := JobWorkerStatus(v)
	if !s.Running || s.PID != os.Getpid() || s.Since.IsZero() {
		t.Fatalf("status while held: %+v", s)
	}
	// Status again: it did not take the lock, so the holder still has it
	// and nobody else can take it.
	if _, ok, _ := TryJobWorker(v); ok {
		t.Fatal("status let the lock go")
	}
	w.Unlock()
	if s := JobWorkerStatus(v); s.Running {
		t.Fatalf("status after the unlock: %+v", s)
	}
	w2, ok, err := TryJobWorker(v)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := w.Relock(); err != nil || ok {
		t.Fatalf("relocked while another holds it: %v %v", ok, err)
	}
	w2.Release()
	if ok, err := w.Relock(); err != nil || !ok {
		t.Fatalf("relock of a free lock: %v %v", ok, err)
	}
	w.Release()
	_, err = WaitJobWorker(v, func() bool { return false })
	if err != nil {
		t.Fatalf("a free lock waited for: %v", err)
	}
}

// A worker adopts only the lock it was handed: a descriptor of another
// file is refused and left open (it is someone else's), and a descriptor
// of the lock file that does not hold the lock is refused busy.
func TestAdoptJobWorkerRefusesAStranger(t *testing.T) {
	v := testvault.New(t)
	other, err := os.Open(filepath.Join(v.Root, vault.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := AdoptJobWorker(v, other.Fd()); !errors.Is(err, vault.ErrInvalid) {
		t.Fatalf("another file adopted: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(other.Fd()), &st); err != nil {
		t.Fatalf("the refused descriptor was closed: %v", err)
	}
	if _, err := AdoptJobWorker(v, 1<<20); !errors.Is(err, vault.ErrInvalid) {
		t.Fatalf("no descriptor adopted: %v", err)
	}

	held, ok, err := TryJobWorker(v)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer held.Release()
	stray, err := v.Files().Open(filepath.Join(v.Root, filepath.FromSlash(workerLockFile)))
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Dup(int(stray.Fd()))
	stray.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AdoptJobWorker(v, uintptr(fd)); !errors.Is(err, vault.ErrBusy) {
		t.Fatalf("a descriptor that does not hold the lock adopted: %v", err)
	}
	// The handed-over descriptor does hold it.
	hand, err := syscall.Dup(int(held.File().Fd()))
	if err != nil {
		t.Fatal(err)
	}
	w, err := AdoptJobWorker(v, uintptr(hand))
	if err != nil {
		t.Fatalf("the holder's descriptor refused: %v", err)
	}
	if flags, err := fcntlFlags(hand); err != nil || flags&syscall.FD_CLOEXEC == 0 {
		t.Errorf("the adopted descriptor passes to the processes the worker starts: %v %v", flags, err)
	}
	w.f.Close()
}

func fcntlFlags(fd int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// An attempt is counted in the job's file, which keeps its place in the
// queue; Take finds a job again under a later claim, or says it is gone.
func TestJobAttemptKeepsItsPlace(t *testing.T) {
	v := testvault.New(t)
	enqueue(t, v, Job{Kind: "summarize", Agent: "a", Session: "s1"}, Job{Kind: "refresh", Agent: "a", Session: "s1"})
	c, err := ClaimJobs(v, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	j, _, _ := c.Next()
	if j, err = c.Attempt(j); err != nil || j.Attempts != 1 {
		t.Fatal(j, err)
	}
	c.Release()
	jobs, err := PendingJobs(v)
	if err != nil || len(jobs) != 2 || jobs[0].Kind != "summarize" || jobs[0].Attempts != 1 || jobs[0].ID() != j.ID() {
		t.Fatalf("queue %+v %v", jobs, err)
	}
	if q := jobs[0].Queued(); q.IsZero() || time.Since(q) < 0 || time.Since(q) > time.Hour {
		t.Errorf("queued at %v", q)
	}
	c, err = ClaimJobs(v, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	again, ok, err := c.Take(j)
	if err != nil || !ok || again.Attempts != 1 {
		t.Fatal(again, ok, err)
	}
	if _, err := c.Attempt(jobs[1]); !errors.Is(err, vault.ErrInvalid) {
		t.Errorf("an attempt at a job not handed out: %v", err)
	}
	if err := c.Done(again); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Take(j); err != nil || ok {
		t.Fatalf("a job done was taken again: %v %v", ok, err)
	}
	q, err := JobQueueStatus(v)
	if err != nil || q.Jobs != 1 || q.Oldest.IsZero() || q.Worker.Running {
		t.Fatalf("queue status %+v %v", q, err)
	}
}
