package hookstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/memvault/memvault/vault"
	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

// The job queue holds work a hook deferred because it may not fit in the
// time its harness gives it (a session summary, a head refresh). Each job is
// one small JSON file in .state/jobs/, named <unix nanoseconds>-<kind>.json,
// so the directory listing is the queue, oldest first. The queue only stores
// and hands out jobs; what a job does is its caller's business.
//
// Delivery is at least once: a job leaves the queue only when its runner
// says it is done, so a runner that crashes mid-job leaves it for the next
// one. Jobs must therefore be idempotent. One runner at a time holds the
// queue (a flock on .state/jobs.lock, which the kernel releases when a
// runner dies), so two hook processes never run the same job at once, and
// a job queued after another is never started before it.
const (
	jobsDir      = ".state/jobs"
	jobsLockFile = ".state/jobs.lock"
)

// Job is one piece of deferred work. The JSON form is the file's content.
type Job struct {
	Kind    string `json:"kind"` // what to run: the runner's vocabulary (hooks: summarize, condense, refresh, import)
	Agent   string `json:"agent"`
	Session string `json:"session"`
	Thread  string `json:"thread,omitempty"`
	Harness string `json:"harness,omitempty"`
	On      string `json:"on,omitempty"` // the trigger that queued it, for the work's record
	// Source and Format name the harness transcript an import job reads.
	Source string `json:"source,omitempty"`
	Format string `json:"format,omitempty"`
	// Attempts counts the background workers that started asking a model
	// for this job (a summary): one killed mid-call leaves the job queued
	// with its attempt counted, so that a job no worker survives is not
	// tried for ever.
	Attempts int `json:"attempts,omitempty"`

	file string // its name in the queue, set when it is read from there
}

// ID is the job's name in the queue ("" for a job not read from there):
// unique, and in queue order.
func (j Job) ID() string { return strings.TrimSuffix(j.file, ".json") }

// Queued is when the job was queued, read from its name in the queue;
// zero for a job not read from there.
func (j Job) Queued() time.Time { return jobTime(j.file) }

// jobTime reads the time a queue file's name starts with.
func jobTime(name string) time.Time {
	stamp, _, ok := strings.Cut(name, "-")
	if !ok {
		return time.Time{}
	}
	ns, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil || ns <= 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// jobStamps hands out queue names in strictly increasing order within one
// open vault (its Slot, under stampsSlot), so that two jobs queued within
// one tick of a coarse clock keep their order and neither replaces the
// other.
type jobStamps struct {
	mu   sync.Mutex
	last int64
}

// stampsSlot is the key of an open vault's jobStamps.
type stampsSlot struct{}

func (js *jobStamps) next() int64 {
	js.mu.Lock()
	defer js.mu.Unlock()
	now := time.Now().UnixNano()
	if now <= js.last {
		now = js.last + 1
	}
	js.last = now
	return now
}

// EnqueueJob adds j at the end of the queue. It is durable when EnqueueJob
// returns: the file is written atomically and synced.
func EnqueueJob(v *vault.Vault, j Job) error { return enqueueJob(v, j, true) }

// EnqueueHint adds j at the end of the queue without syncing it: for a job
// whose loss in a crash of the machine costs a delay and nothing else (a
// refresh of the heads after a write, which the next write or session end
// queues again), on a writer's path where two fsyncs are most of the cost.
// A file a crash tore is dropped by the next claim (Next).
func EnqueueHint(v *vault.Vault, j Job) error { return enqueueJob(v, j, false) }

// EnqueueJobs adds jobs at the end of the queue in their order, durable
// when it returns, as EnqueueJob each, with one sync of the queue's folder
// for them all (a session end queues three: fileio.WriteAtomicAll).
func EnqueueJobs(v *vault.Vault, jobs ...Job) error {
	files := make([]fileio.File, 0, len(jobs))
	for _, j := range jobs {
		path, data, err := jobFile(v, j)
		if err != nil {
			return err
		}
		files = append(files, fileio.File{Path: path, Data: data})
	}
	return v.Files().WriteAtomicAll(files)
}

func enqueueJob(v *vault.Vault, j Job, durable bool) error {
	path, data, err := jobFile(v, j)
	if err != nil {
		return err
	}
	if !durable {
		return v.Files().WriteCache(path, data)
	}
	return v.Files().WriteAtomic(path, data)
}

// jobFile is the path and the bytes of j's file in the queue, named to
// sort after every job this process queued before.
func jobFile(v *vault.Vault, j Job) (string, []byte, error) {
	if err := fileio.CheckName("job kind", j.Kind); err != nil {
		return "", nil, err
	}
	data, err := json.Marshal(j)
	if err != nil {
		return "", nil, fmt.Errorf("queue %s job: %w", j.Kind, err)
	}
	name := fmt.Sprintf("%d-%s.json", v.Slot(stampsSlot{}, func() any { return new(jobStamps) }).(*jobStamps).next(), j.Kind)
	return filepath.Join(v.Root, filepath.FromSlash(jobsDir), name), data, nil
}

// MarkStarted counts one more attempt at j, read from the queue, in its
// file, without a claim and without syncing: a job whose runner marks it
// before it reads anything, so that what is queued after the mark is
// queued anew (a refresh after a write: hooks/afterwrite.go), while the
// job stays queued until it ran. A job gone already is no error.
func MarkStarted(v *vault.Vault, j Job) error {
	if j.file == "" {
		return fault.New(vault.ErrInvalid, "job %s %s/%s: not read from the queue", j.Kind, j.Agent, j.Session)
	}
	path := filepath.Join(v.Root, filepath.FromSlash(jobsDir), j.file)
	if _, err := v.Files().Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	j.Attempts++
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("job %s: %w", j.file, err)
	}
	return v.Files().WriteCache(path, data)
}

// PendingJobs lists the queued jobs, oldest first, without claiming them.
// A file that is not a job is left out.
func PendingJobs(v *vault.Vault) ([]Job, error) {
	names, err := jobFiles(v)
	if err != nil {
		return nil, err
	}
	var out []Job
	for _, name := range names {
		if j, err := readJob(v, name); err == nil {
			out = append(out, j)
		}
	}
	return out, nil
}

// jobFiles lists the queue's file names in queue order; os.ReadDir sorts
// by name, and names start with a fixed-width time until the year 2286.
func jobFiles(v *vault.Vault) ([]string, error) {
	entries, err := v.Files().ReadDir(filepath.Join(v.Root, filepath.FromSlash(jobsDir)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fault.IO("read "+jobsDir, err)
	}
	var names []string
	for _, e := range entries {
		// Temporary files of a write in progress start with a dot.
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func readJob(v *vault.Vault, name string) (Job, error) {
	data, err := v.Files().ReadFile(filepath.Join(v.Root, filepath.FromSlash(jobsDir), name))
	if err != nil {
		return Job{}, fault.IO("read job "+name, err)
	}
	var j Job
	if err := json.Unmarshal(data, &j); err != nil {
		return Job{}, fault.New(vault.ErrCorrupt, "job %s: %v", name, err)
	}
	j.file = name
	return j, nil
}

// JobClaim is the right to run the queue's jobs, held by one runner at a
// time. Release it when done; a crashed holder's claim ends with it.
type JobClaim struct {
	v    *vault.Vault
	fl   *flock.Flock
	seen map[string]bool
}

// ClaimJobs takes the queue for this runner, waiting at most wait for
// another runner to let it go, and fails with vault.ErrBusy (see vault.IsBusy) if none
// did. A runner that finds the queue busy may simply leave the jobs to the
// one running them.
func ClaimJobs(v *vault.Vault, wait time.Duration) (*JobClaim, error) {
	if err := v.Files().MkdirAll(filepath.Join(v.Root, ".state")); err != nil {
		return nil, fault.IO("create .state", err)
	}
	// Opened read-write and never deleted, as the vault lock: deleting a
	// lock file lets two runners hold it on two different inodes.
	if err := v.Files().Check(filepath.Join(v.Root, filepath.FromSlash(jobsLockFile))); err != nil {
		return nil, err
	}
	fl := flock.New(filepath.Join(v.Root, filepath.FromSlash(jobsLockFile)),
		flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(fileio.FilePerm))
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; ; {
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fault.IO("lock "+jobsLockFile, err)
		}
		if ok {
			return &JobClaim{v: v, fl: fl, seen: map[string]bool{}}, nil
		}
		if !time.Now().Before(deadline) {
			return nil, fault.New(vault.ErrBusy, "job queue busy: another runner holds it; gave up after %s", wait)
		}
		time.Sleep(min(delay, time.Until(deadline)))
		if delay < 16*time.Millisecond {
			delay *= 2
		}
	}
}

// Next returns the oldest job this claim has not handed out yet, reading
// the queue afresh so that jobs queued meanwhile are found too; ok is false
// when there is none. A job handed out and not marked Done stays queued for
// the next claim, not this one, so a job that keeps failing cannot hold a
// runner in a loop. A file that does not hold a job is removed: nothing
// could ever run it.
func (c *JobClaim) Next() (j Job, ok bool, err error) {
	names, err := jobFiles(c.v)
	if err != nil {
		return Job{}, false, err
	}
	for _, name := range names {
		if c.seen[name] {
			continue
		}
		c.seen[name] = true
		j, err := readJob(c.v, name)
		switch {
		case err == nil:
			return j, true, nil
		case errors.Is(err, vault.ErrCorrupt):
			_ = c.v.Files().Remove(filepath.Join(c.v.Root, filepath.FromSlash(jobsDir), name))
		case errors.Is(err, fs.ErrNotExist):
			// Run and removed by a runner that does not take the claim
			// (an older memvault): nothing left to do.
		default:
			return Job{}, false, err
		}
	}
	return Job{}, false, nil
}

// Done removes j, handed out by Next, from the queue: it ran, or its
// runner gave up on it for good.
func (c *JobClaim) Done(j Job) error {
	if j.file == "" || !c.seen[j.file] {
		return fault.New(vault.ErrInvalid, "job %s %s/%s: not handed out by this claim", j.Kind, j.Agent, j.Session)
	}
	err := c.v.Files().Remove(filepath.Join(c.v.Root, filepath.FromSlash(jobsDir), j.file))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fault.IO("remove job "+j.file, err)
	}
	return nil
}

// Take hands out j again under this claim, as the queue holds it now (a
// worker releases the queue while a model writes a job's summary, then
// claims it again to write it): ok is false when j left the queue
// meanwhile.
func (c *JobClaim) Take(j Job) (Job, bool, error) {
	if j.file == "" {
		return Job{}, false, fault.New(vault.ErrInvalid, "job %s %s/%s: not read from the queue", j.Kind, j.Agent, j.Session)
	}
	fresh, err := readJob(c.v, j.file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Job{}, false, nil
	case err != nil:
		return Job{}, false, err
	}
	c.seen[j.file] = true
	return fresh, true, nil
}

// Attempt counts one more attempt at j, handed out by this claim, in its
// file (written atomically and synced, under its name, so it keeps its
// place in the queue), and returns j as it is now.
func (c *JobClaim) Attempt(j Job) (Job, error) {
	if j.file == "" || !c.seen[j.file] {
		return j, fault.New(vault.ErrInvalid, "job %s %s/%s: not handed out by this claim", j.Kind, j.Agent, j.Session)
	}
	j.Attempts++
	data, err := json.Marshal(j)
	if err != nil {
		return j, fmt.Errorf("job %s: %w", j.file, err)
	}
	return j, c.v.Files().WriteAtomic(filepath.Join(c.v.Root, filepath.FromSlash(jobsDir), j.file), data)
}

// Release lets another runner claim the queue. Jobs handed out and not
// marked Done stay queued.
func (c *JobClaim) Release() {
	_ = c.fl.Unlock()
}
