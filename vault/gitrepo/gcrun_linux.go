package gitrepo

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// gcLocksKnowable: on Linux, /proc tells which processes are alive and
// what they have open, so a killed gc's lock files can be told from a
// live git's.
const gcLocksKnowable = true

// procStart is pid's start time in clock ticks since boot (/proc/PID/stat,
// field 22), which tells a pid reused by a later process from the one
// recorded; "" when it cannot be read.
func procStart(pid int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing parenthesis (state is field 3).
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// procAlive reports whether pid is a live process started at started (any
// start when started is ""). A zombie, killed and not yet reaped, holds
// nothing and counts as gone.
func procAlive(pid int, started string) bool {
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM { // EPERM: another user's
		return false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(data, ')'); i >= 0 {
		if f := strings.Fields(string(data[i+1:])); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
			return false
		}
	}
	return started == "" || procStart(pid) == started
}

// gitHasOpen reports whether a live git process (its name git or git-…)
// other than this one works in the vault at root: its working folder is in
// it, or one of its open files is under it. A process whose /proc entries
// this user may not read is another user's, which cannot hold the
// vault's locks, and is passed over.
func gitHasOpen(root string) bool {
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	inside := func(p string) bool { return p == root || strings.HasPrefix(p, root+string(filepath.Separator)) }
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: assume one does
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := "/proc/" + e.Name()
		comm, err := os.ReadFile(dir + "/comm")
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		if name != "git" && !strings.HasPrefix(name, "git-") {
			continue
		}
		if !procAlive(pid, "") {
			continue
		}
		if cwd, err := os.Readlink(dir + "/cwd"); err == nil && inside(cwd) {
			return true
		}
		fds, _ := os.ReadDir(dir + "/fd")
		for _, fd := range fds {
			if target, err := os.Readlink(dir + "/fd/" + fd.Name()); err == nil && inside(target) {
				return true
			}
		}
	}
	return false
}

// changeTime is a file's inode change time: when a lock file was created
// (git writes its content at once), and unlike its modification time not
// something a tool sets.
func changeTime(info fs.FileInfo) time.Time {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	}
	return info.ModTime()
}
