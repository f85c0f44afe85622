package gitrepo

// A gc run's mark, and the lock files a killed one leaves.
//
// git never breaks a lock file, and `git gc` takes many: packed-refs.lock
// and <ref>.lock while it packs refs (and packed-refs.new, the file it
// writes them into, created exclusively too), the ref's and its reflog's while it
// expires reflogs (logs/refs/heads/main.lock), objects/info/commit-graph.lock,
// gc.pid.lock. A gc killed with its process group leaves any of them, and
// then every later write (which moves refs/heads/main under main.lock) or
// every later gc fails until a person removes the file. git writes no pid
// into these files, so whose a lock file is cannot be read from it; memvault
// records it around the run instead.
//
// While memvault gc runs (under the vault lock), .locks/gc-run says so: the
// run's start, and the pid and start time of memvault and of the git it
// started; the run touches it every gcHeartbeat, so its modification time
// says until when the run was alive. A finished run removes it; a killed
// run leaves it. The next process that holds the vault lock (a write, at
// its first git lock; gc; repair) finds it, and ClearStaleGCLocks removes
// a lock file under .git only when all of these hold:
//
//   - every process the mark names is gone (a pid reused by another
//     process is told apart by its start time);
//   - no live git process has the vault open: none has its working folder
//     in the vault or a file under its .git open (Linux: /proc; elsewhere
//     memvault cannot tell, and clears nothing);
//   - the lock file was created while the run was alive: its change time
//     between the run's start and the mark's last touch (plus slack);
//     .git/gc.pid too, when the process it names is gone.
//
// A lock file a person's git holds fails the second test while that git
// runs, and the third unless it was taken during the dead run; a lock file
// that fails any test is left, with the error that names it.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/memvault/memvault/vault/fault"
	"github.com/memvault/memvault/vault/fileio"
)

const (
	gcRunMark = ".locks/gc-run"
	// gcHeartbeat is how often a running gc touches its mark.
	gcHeartbeat = 500 * time.Millisecond
	// gcSlack widens the run's window on either side: a heartbeat missed
	// by a busy machine, and the file system's coarse clock.
	gcSlack = 3 * time.Second
)

// gcRun is the mark of a gc under way.
type gcRun struct {
	root  fileio.Root
	lines []string
	stop  chan struct{}
	done  chan struct{}
}

// startGCRun clears what a killed run left (the caller holds the vault
// lock), then marks this run: this process now, the git it starts added by
// child.
func (r *Repo) startGCRun() (*gcRun, error) {
	if _, err := r.ClearStaleGCLocks(); err != nil {
		return nil, err
	}
	g := &gcRun{root: fileio.At(r.root), stop: make(chan struct{}), done: make(chan struct{})}
	if _, err := g.root.Stat(filepath.Join(r.root, gcRunMark)); err == nil {
		// Still there: a process of the last run lives on (its git, when
		// only memvault was killed), or a git works in the vault.
		e := fault.New(fault.ErrBusy, "gc: an earlier gc's git, or another git command, is still running in the vault")
		return nil, e.WithHint("wait for it to end, then run gc again (%s names the earlier run)", gcRunMark)
	}
	g.lines = []string{"memvault gc run", "start " + strconv.FormatInt(time.Now().UnixNano(), 10), procLine(os.Getpid())}
	if err := g.write(); err != nil {
		return nil, err
	}
	go g.beat()
	return g, nil
}

func procLine(pid int) string { return fmt.Sprintf("pid %d %s", pid, procStart(pid)) }

func (g *gcRun) write() error {
	return g.root.WriteAtomic(filepath.Join(g.root.Dir(), gcRunMark), []byte(strings.Join(g.lines, "\n")+"\n"))
}

// child adds the git process the run started.
func (g *gcRun) child(pid int) error {
	g.lines = append(g.lines, procLine(pid))
	return g.write()
}

func (g *gcRun) beat() {
	defer close(g.done)
	t := time.NewTicker(gcHeartbeat)
	defer t.Stop()
	p := filepath.Join(g.root.Dir(), gcRunMark)
	for {
		select {
		case <-g.stop:
			return
		case now := <-t.C:
			os.Chtimes(p, now, now) // .locks was checked for links when the mark was written
		}
	}
}

// end removes the mark: the run is over, and what it took it released.
func (g *gcRun) end() {
	close(g.stop)
	<-g.done
	g.root.Remove(filepath.Join(g.root.Dir(), gcRunMark))
}

// ClearStaleGCLocks removes the lock files a killed gc left under .git,
// when it can tell they are that run's (the rules are at the top of this
// file), and the run's mark with them; it returns the paths it removed,
// relative to .git. It does nothing when there is no mark. The caller
// holds the vault lock, so no other memvault process is inside a
// transaction or a gc.
func (r *Repo) ClearStaleGCLocks() ([]string, error) {
	root := fileio.At(r.root)
	markPath := filepath.Join(r.root, gcRunMark)
	info, err := root.Stat(markPath)
	if err != nil {
		return nil, nil // no mark: no gc was killed
	}
	data, err := root.ReadFile(markPath)
	if err != nil {
		return nil, fault.IO("read "+gcRunMark, err)
	}
	start, pids := parseGCRun(string(data))
	for pid, started := range pids {
		if procAlive(pid, started) {
			return nil, nil // the run, or the git it started, is still going
		}
	}
	if start.IsZero() || !gcLocksKnowable {
		return nil, root.Remove(markPath) // nothing to judge by: the locks are left to a person
	}
	if gitHasOpen(r.root) {
		return nil, nil // a git process works in the vault: its locks are its own
	}
	from := start.Add(-gcSlack)
	to := info.ModTime().Add(gcHeartbeat + gcSlack)
	var removed []string
	_ = filepath.WalkDir(r.gitDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.IsDir() && len(e.Name()) == 2 && filepath.Base(filepath.Dir(p)) == "objects" {
			return filepath.SkipDir // loose objects: no lock file among them
		}
		if !e.Type().IsRegular() {
			return nil
		}
		name := e.Name()
		stale := strings.HasSuffix(name, ".lock")
		if name == "packed-refs.new" && p == filepath.Join(r.gitDir, name) {
			stale = true // the file git writes packed refs into under packed-refs.lock, created exclusively
		}
		if name == "gc.pid" && p == filepath.Join(r.gitDir, "gc.pid") {
			stale = gcPidGone(p) // its git is gone (or a zombie, which git would wait on for 12 hours)
		}
		if !stale {
			return nil
		}
		li, err := e.Info()
		if err != nil {
			return nil
		}
		if c := changeTime(li); c.Before(from) || c.After(to) {
			return nil // taken before the run, or after it died: not the run's
		}
		if os.Remove(p) == nil {
			rel, _ := filepath.Rel(r.gitDir, p)
			removed = append(removed, filepath.ToSlash(rel))
		}
		return nil
	})
	if err := root.Remove(markPath); err != nil {
		return removed, fault.IO("remove "+gcRunMark, err)
	}
	return removed, nil
}

// parseGCRun reads a mark: the run's start, and each process's pid with
// its start time ("" when it could not be known).
func parseGCRun(s string) (time.Time, map[int]string) {
	var start time.Time
	pids := map[int]string{}
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "start":
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				start = time.Unix(0, n)
			}
		case len(f) >= 2 && f[0] == "pid":
			if pid, err := strconv.Atoi(f[1]); err == nil && pid > 0 {
				pids[pid] = strings.Join(f[2:], " ")
			}
		}
	}
	return start, pids
}

// gcPidGone reports whether .git/gc.pid names a process that is gone: one
// the run started (the git it was killed with, whose pid the mark may not
// have had time to record), which git would otherwise respect for 12 hours
// while the pid is reused or its zombie is not reaped.
func gcPidGone(p string) bool {
	data, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	var pid int
	fmt.Sscanf(string(data), "%d", &pid)
	return pid > 0 && !procAlive(pid, "")
}
