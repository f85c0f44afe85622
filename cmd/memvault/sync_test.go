package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/memvault/memvault/vault/vaulttest"
)

// syncRig is a hub (a bare repository) and clones of one vault, each with
// its own HOME, run through the real binary.
type syncRig struct {
	t    *testing.T
	dir  string
	home string
	hub  string
	path string // PATH for memvault; "" keeps the test's
}

func newSyncRig(t *testing.T) *syncRig {
	t.Helper()
	if !hasGit() {
		t.Skip("the rig is set up with git")
	}
	dir := t.TempDir()
	s := &syncRig{t: t, dir: dir, home: filepath.Join(dir, "home"), hub: filepath.Join(dir, "hub.git")}
	if err := makeHome(s.home); err != nil {
		t.Fatal(err)
	}
	origin := filepath.Join(dir, "origin", ".memory")
	s.mv(origin, "init")
	s.mv(origin, "remember", "base fact")
	s.git(dir, "clone", "-q", "--bare", origin, s.hub)
	return s
}

// clone makes a clone of the hub's vault named name and returns its root.
func (s *syncRig) clone(name string) string {
	root := filepath.Join(s.dir, name, ".memory")
	s.git(s.dir, "clone", "-q", s.hub, root)
	return root
}

func (s *syncRig) env() []string {
	env := append(os.Environ(), "HOME="+s.home, "GIT_CONFIG_NOSYSTEM=1", "TZ=UTC", "MEMVAULT_LOCK_TIMEOUT=30s",
		"MEMVAULT_AGENT=", "MEMVAULT_DIR=", "MEMVAULT_THREAD=", "MEMVAULT_SESSION=", "MEMVAULT_HARNESS=")
	if s.path != "" {
		env = append(env, "PATH="+s.path)
	}
	return env
}

// try runs memvault on vault root and returns its output and exit code.
func (s *syncRig) try(root string, args ...string) (string, string, int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := plainMemvault(s.t)
	cmd := exec.CommandContext(ctx, bin, append([]string{"--vault", root}, args...)...)
	cmd.Dir = s.dir
	if args[0] == "install" {
		// install git --vault has a flag of that name: it finds the vault
		// from the working directory.
		cmd = exec.CommandContext(ctx, bin, args...)
		cmd.Dir = filepath.Dir(root)
	}
	cmd.Env = s.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			s.t.Fatalf("memvault %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

// hook runs a hook event of the vault at root with payload on stdin, from
// the vault's project folder, as a harness does; hooks always exit 0.
func (s *syncRig) hook(root, harness, event string, payload map[string]any) {
	s.t.Helper()
	bin := plainMemvault(s.t)
	data, _ := json.Marshal(payload)
	cmd := exec.Command(bin, "--vault", root, "hook", harness, event)
	cmd.Dir = filepath.Dir(root)
	cmd.Env = s.env()
	cmd.Stdin = bytes.NewReader(data)
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("hook %s %s: %v\n%s", harness, event, err, out)
	}
}

func (s *syncRig) mv(root string, args ...string) string {
	s.t.Helper()
	out, errOut, code := s.try(root, args...)
	if code != 0 {
		s.t.Fatalf("memvault %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func (s *syncRig) git(dir string, args ...string) string {
	s.t.Helper()
	return vaulttest.Git{Dir: dir, Env: vaulttest.Sandbox(s.home)}.Run(s.t, args...)
}

// converged checks that every vault has the same commit, verifies, and
// passes git fsck, and that the hub has that commit too.
func (s *syncRig) converged(roots ...string) {
	s.t.Helper()
	want := strings.TrimSpace(s.git(s.hub, "rev-parse", "main"))
	for _, root := range roots {
		if got := strings.TrimSpace(s.git(root, "rev-parse", "HEAD")); got != want {
			s.t.Errorf("%s at %s, hub at %s", root, got, want)
		}
		s.mv(root, "verify")
		if st := s.git(root, "status", "--porcelain"); st != "" {
			s.t.Errorf("%s: git status:\n%s", root, st)
		}
		vaulttest.Fsck(s.t, root)
	}
	vaulttest.Fsck(s.t, s.hub)
}

// asItWas is what a failed sync must leave as it was: the branch, git's
// index, and the vault's files. A fetch may have added objects and moved
// the remote-tracking ref: neither changes the vault.
func (s *syncRig) asItWas(root string) string {
	s.t.Helper()
	var b strings.Builder
	b.WriteString(s.git(root, "rev-parse", "HEAD"))
	b.WriteString(s.git(root, "ls-files", "--stage"))
	files := vaulttest.Files(s.t, root)
	names := make([]string, 0, len(files))
	for name := range files {
		if !strings.HasPrefix(name, ".git/") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&b, "%s %x\n", name, files[name])
	}
	return b.String()
}

// twoClones is the scenario: two clones write, then sync in turn
// through remote, and end up with one history holding both writes.
func (s *syncRig) twoClones(remote string, engine string) {
	s.t.Helper()
	a, b := s.clone("a"), s.clone("b")
	s.mv(a, "remember", "from a")
	s.mv(b, "remember", "from b")
	args := []string{"sync", "--engine", engine}
	if remote != "" {
		args = append(args, remote)
	}
	s.mv(a, args...)
	out := s.mv(b, args...)
	for _, want := range []string{"fetched 1 commit", "merged", "joined the ledger's open tips", "pushed"} {
		if !strings.Contains(out, want) {
			s.t.Errorf("second sync says:\n%s\nwant %q", out, want)
		}
	}
	if out := s.mv(a, args...); !strings.Contains(out, "fast-forwarded") {
		s.t.Errorf("third sync says:\n%s\nwant a fast-forward", out)
	}
	s.converged(a, b)
	for _, root := range []string{a, b} {
		led := s.mv(root, "ledger", "--json")
		for _, want := range []string{"base fact", "from a", "from b"} {
			if strings.Count(led, `"`+want+`"`) != 1 {
				s.t.Errorf("%s: %q not exactly once in the ledger", root, want)
			}
		}
	}
}

func TestSyncFileTransport(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"git", "go-git"} {
		for _, form := range []string{"path", "file-url", "origin"} {
			t.Run(engine+"/"+form, func(t *testing.T) {
				t.Parallel()
				s := newSyncRig(t)
				remote := ""
				switch form {
				case "path":
					remote = s.hub
				case "file-url":
					remote = "file://" + s.hub
				}
				s.twoClones(remote, engine)
			})
		}
	}
}

// Without the git binary on the PATH, sync runs on go-git alone.
func TestSyncWithoutGitBinary(t *testing.T) {
	t.Parallel()
	s := newSyncRig(t)
	bin := plainMemvault(t)
	only := filepath.Join(s.dir, "bin")
	os.MkdirAll(only, 0o700)
	if err := os.Symlink(bin, filepath.Join(only, "memvault")); err != nil {
		t.Fatal(err)
	}
	a, b := s.clone("a"), s.clone("b")
	s.path = only
	s.mv(a, "remember", "from a")
	s.mv(b, "remember", "from b")
	s.mv(a, "sync")
	out := s.mv(b, "sync", "file://"+s.hub)
	if !strings.Contains(out, "merged") {
		t.Errorf("sync without git:\n%s", out)
	}
	s.mv(a, "sync", s.hub)
	if out, errOut, code := s.try(a, "sync", "--engine", "git"); code != 2 || !strings.Contains(errOut, "git is not installed") {
		t.Errorf("--engine git without git: exit %d\n%s%s", code, out, errOut)
	}
	s.path = ""
	s.converged(a, b)
}

// freePort returns a port on 127.0.0.1 that nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func gitExecPath(t *testing.T, prog string) string {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("git --exec-path: ", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), prog)
	if _, err := os.Stat(p); err != nil {
		t.Skip(prog + " is not installed")
	}
	return p
}

// waitListening waits until something accepts connections on addr.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}

func TestSyncGitDaemon(t *testing.T) {
	t.Parallel()
	s := newSyncRig(t)
	daemon := gitExecPath(t, "git-daemon")
	port := freePort(t)
	cmd := exec.Command(daemon, "--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), "--base-path="+s.dir,
		"--export-all", "--enable=receive-pack", "--reuseaddr", "--informative-errors", s.dir)
	cmd.Env = vaulttest.Sandbox(s.home)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitListening(t, fmt.Sprintf("127.0.0.1:%d", port))
	s.twoClonesOver(t, fmt.Sprintf("git://127.0.0.1:%d/hub.git", port), "git")
}

// twoClonesOver writes in two clones and syncs them through url with each
// engine, until both hold the same vault.
func (s *syncRig) twoClonesOver(t *testing.T, url, via string) {
	for _, engine := range []string{"git", "go-git"} {
		t.Run(engine, func(t *testing.T) {
			s.t = t
			a, b := s.clone(engine+"-a"), s.clone(engine+"-b")
			s.mv(a, "remember", "from a over "+via+" with "+engine)
			s.mv(b, "remember", "from b over "+via+" with "+engine)
			s.mv(a, "sync", "--engine", engine, url)
			s.mv(b, "sync", "--engine", engine, url)
			s.mv(a, "sync", "--engine", engine, url)
			s.converged(a, b)
		})
	}
}

func TestSyncHTTPBackend(t *testing.T) {
	t.Parallel()
	s := newSyncRig(t)
	backend := gitExecPath(t, "git-http-backend")
	s.git(s.hub, "config", "http.receivepack", "true")
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + s.dir, "GIT_HTTP_EXPORT_ALL=1",
		"HOME=" + s.home, "GIT_CONFIG_NOSYSTEM=1"}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	s.twoClonesOver(t, "http://"+l.Addr().String()+"/hub.git", "http")
}

func TestSyncErrors(t *testing.T) {
	t.Parallel()
	s := newSyncRig(t)
	a := s.clone("a")
	digest := func() string { return s.asItWas(a) }
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"unreachable", []string{"sync", fmt.Sprintf("git://127.0.0.1:%d/x.git", freePort(t))}, 8, "is unreachable"},
		{"unreachable go-git", []string{"sync", "--engine", "go-git", fmt.Sprintf("git://127.0.0.1:%d/x.git", freePort(t))}, 8, "is unreachable"},
		{"no such path", []string{"sync", filepath.Join(s.dir, "nowhere")}, 8, "no such remote"},
	}
	plain := filepath.Join(s.dir, "plain")
	s.git(s.dir, "init", "-q", plain)
	os.WriteFile(filepath.Join(plain, "f.txt"), []byte("x\n"), 0o600)
	s.git(plain, "add", "f.txt")
	s.git(plain, "commit", "-q", "-m", "not a vault")
	for _, engine := range []string{"git", "go-git"} {
		cases = append(cases, struct {
			name string
			args []string
			code int
			msg  string
		}{"not a vault " + engine, []string{"sync", "--engine", engine, "--no-push", plain}, 8, "is not a memvault vault"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := digest()
			out, errOut, code := s.try(a, c.args...)
			if code != c.code || !strings.Contains(errOut, c.msg) || !strings.Contains(errOut, "hint: ") {
				t.Errorf("exit %d, want %d with %q\n%s%s", code, c.code, c.msg, out, errOut)
			}
			if digest() != before {
				t.Errorf("the vault changed")
			}
		})
	}
	t.Run("no remote", func(t *testing.T) {
		lone := filepath.Join(s.dir, "lone", ".memory")
		s.mv(lone, "init")
		_, errOut, code := s.try(lone, "sync")
		if code != 8 || !strings.Contains(errOut, "git -C "+lone+" remote add origin URL") {
			t.Errorf("exit %d:\n%s", code, errOut)
		}
	})
	t.Run("cannot merge", func(t *testing.T) {
		b := s.clone("b")
		// A file of the person's own that both sides changed on the same
		// line: no driver can settle that.
		for i, root := range []string{a, b} {
			os.WriteFile(filepath.Join(root, "notes.txt"), []byte(fmt.Sprintf("side %d\n", i)), 0o600)
			s.git(root, "add", "notes.txt")
			s.git(root, "commit", "-q", "-m", "notes")
		}
		s.mv(a, "sync")
		for _, engine := range []string{"git", "go-git"} {
			before := s.asItWas(b)
			out, errOut, code := s.try(b, "sync", "--engine", engine)
			if code != 4 || !strings.Contains(errOut, "notes.txt") {
				t.Errorf("%s: exit %d\n%s%s", engine, code, out, errOut)
			}
			if s.asItWas(b) != before {
				t.Errorf("%s: the vault changed", engine)
			}
			if st := s.git(b, "status", "--porcelain"); st != "" {
				t.Errorf("%s: git status:\n%s", engine, st)
			}
		}
	})
	t.Run("non-bare remote", func(t *testing.T) {
		c := s.clone("c")
		s.mv(c, "remember", "from c")
		_, errOut, code := s.try(c, "sync", a)
		if code != 8 || !strings.Contains(errOut, "checked out") || !strings.Contains(errOut, "--no-push") {
			t.Errorf("exit %d:\n%s", code, errOut)
		}
	})
}
