package executor

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// netIsolation sets attr up to start a process in a network namespace of
// its own, where only a loopback interface that is down exists: nothing
// it connects to, the host's 127.0.0.1 included, answers. As root that is
// CLONE_NEWNET alone; as another user it needs a user namespace too
// (CLONE_NEWUSER, the user mapped to itself, so the executor keeps its
// uid and gid and the files it reads are still its own).
func netIsolation(attr *syscall.SysProcAttr) {
	attr.Cloneflags |= syscall.CLONE_NEWNET
	if uid := os.Getuid(); uid != 0 {
		gid := os.Getgid()
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
}

var netProbe struct {
	once sync.Once
	err  error
}

// NetIsolationAvailable reports whether this machine can start a process
// in a network namespace of its own, and if not, why: it starts one (a
// shell that exits at once) the way an isolated executor is started, once
// per process. A kernel without user namespaces, or one that refuses them
// to unprivileged users (sysctl kernel.unprivileged_userns_clone,
// user.max_user_namespaces, an AppArmor restriction), says so here.
func NetIsolationAvailable() error {
	netProbe.once.Do(func() {
		sh, err := exec.LookPath("sh")
		if err != nil {
			netProbe.err = fmt.Errorf("no sh to probe with: %v", err)
			return
		}
		cmd := exec.Command(sh, "-c", ":")
		cmd.Env = []string{}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		netIsolation(cmd.SysProcAttr)
		if out, err := cmd.CombinedOutput(); err != nil {
			why := strings.TrimSpace(string(out))
			if why == "" {
				why = unwrapExec(err).Error()
			}
			netProbe.err = fmt.Errorf("this kernel refuses a network namespace to uid %d (%s); user namespaces may be off (user.max_user_namespaces, kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns)", os.Getuid(), why)
		}
	})
	return netProbe.err
}
